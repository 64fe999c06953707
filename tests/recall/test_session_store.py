"""Recall over a REAL ``hermes_state.SessionDB`` (hermes-agent 0.19.0) in a temporary directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batontest.transcripts import coding_session

from baton_engine.messages.entry import build_entries
from baton_engine.recall import MemoryIndex, SessionStoreSource, search
from baton_engine.tokens.rough import estimate_tokens_rough as rough

pytestmark = pytest.mark.hermes


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    from hermes_state import SessionDB

    store = SessionDB(db_path=tmp_path / "state.db")
    yield store
    store.close()


class ReadOnly:
    """Only what the source may use: proves it reads through public methods and never writes."""

    def __init__(self, db) -> None:
        self.get_session, self.get_messages = db.get_session, db.get_messages


def persist(db, session_id: str, messages: list[dict]) -> None:
    for message in messages:
        db.append_message(session_id, message["role"], message.get("content"), tool_name=message.get("tool_name"),
                          tool_calls=message.get("tool_calls"), tool_call_id=message.get("tool_call_id"))


BLOCK = {"role": "user", "content": "[Baton handoff 0193abcd | status: ready | captured 2026-12-01T09:00:00Z]\nbrief"}
LIVE = [BLOCK, {"role": "user", "content": "live turn: check settle.py again"}]


def test_rotation_shape_searches_the_parent_chain_only(db) -> None:
    db.create_session("root", "cli")
    persist(db, "root", coding_session()[:5])
    db.end_session("root", "compression")
    db.create_session("mid", "cli", parent_session_id="root")
    persist(db, "mid", coding_session()[5:])
    db.end_session("mid", "compression")
    db.create_session("tip", "cli", parent_session_id="mid")
    persist(db, "tip", LIVE)
    db.create_session("other", "cli")  # an unrelated conversation about the same file
    persist(db, "other", [{"role": "user", "content": "other session: settle.py settle.py settle.py"}])
    db.create_session("branch", "cli", parent_session_id="tip", model_config={"_branched_from": "tip"})

    source = SessionStoreSource(ReadOnly(db), "tip")
    assert source.lineage() == ["root", "mid", "tip"]
    texts = [entry.text for entry in source.entries()]
    assert texts == [entry.text for entry in build_entries(coding_session())]  # no live rows, no Baton block
    hits = search(source, "settle.py", 20, rough)
    assert hits and all("other session" not in hit.snippet and "live turn" not in hit.snippet for hit in hits)
    assert SessionStoreSource(ReadOnly(db), "branch").lineage() == ["branch"]  # a /branch does not inherit recall


def test_in_place_shape_finds_the_compacted_rows(db) -> None:
    db.create_session("s", "cli")
    persist(db, "s", coding_session())
    db.archive_and_compact("s", LIVE)
    rows = db.get_messages("s", include_inactive=True)
    assert {(row["active"], row["compacted"]) for row in rows} == {(0, 1), (1, 0)}
    source = SessionStoreSource(ReadOnly(db), "s")
    hits = search(source, "AssertionError", 5, rough)
    assert hits[0].tool_name == "terminal"
    assert json.loads(hits[0].arguments) == {"command": "pytest -q tests/test_settle.py"}
    assert all("live turn" not in hit.snippet for hit in search(source, "settle.py", 20, rough))


def test_rewound_rows_are_not_recalled(db) -> None:
    db.create_session("s", "cli")
    persist(db, "s", [{"role": "user", "content": "keep the ledger"}, {"role": "user", "content": "taken back ledger"}])
    taken_back = db.get_messages("s")[1]["id"]
    db.rewind_to_message("s", taken_back)
    db.archive_and_compact("s", LIVE)
    assert [entry.text for entry in SessionStoreSource(db, "s").entries()] == ["keep the ledger"]


def test_refs_agree_with_the_in_process_index(db) -> None:
    db.create_session("root", "cli")
    persist(db, "root", coding_session())
    db.end_session("root", "compression")
    db.create_session("tip", "cli", parent_session_id="root")
    index = MemoryIndex()
    refs = index.add("k", coding_session())
    assert [entry.ref for entry in SessionStoreSource(db, "tip").entries()] == refs
