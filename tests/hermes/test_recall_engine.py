"""The engine's continuity: ``baton_recall`` answers from what compress() took out, and each handoff carries
the region's anchors and the lineage's user words (record field ``continuity`` and the brief), redacted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.records import handoff_records as _records
from batontest.schemas import assert_conforms
from batontest.secrets_corpus import SAMPLES

from baton_engine.agent.runtime import get_runtime
from baton_engine.compaction import continuity
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.messages.markers import is_baton_message
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
SECRET = SAMPLES[0]
BRIEF_MAX = 1200


def _round(index: int, output: str) -> list[dict[str, Any]]:
    call = f"call_{index}"
    return [
        {"role": "assistant", "content": f"Step {index}.", "tool_calls": [{"id": call, "type": "function", "function": {
            "name": "terminal", "arguments": json.dumps({"command": f"make check-{index}"})}}]},
        {"role": "tool", "tool_call_id": call,
         "content": json.dumps({"output": output + "\n" + " ".join(f"w{index}-{n}" for n in range(300)),
                                "exit_code": 2 if index == 0 else 0, "error": None})},
    ]


def _engine(project: Path) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block={"fresh_tail_tokens": 600,
                                                               "brief_max_tokens": BRIEF_MAX}))


def _call(engine: BatonContextEngine, **args: Any) -> dict[str, Any]:
    return json.loads(engine.handle_tool_call("baton_recall", args))


def test_recall_after_two_compactions_and_a_rotation(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Never deploy on Fridays; the staging host is stg-7.internal."},
        *_round(0, f"build-4821 FAILED: checksum mismatch in bundle-9f3c2a7b\nkey {SECRET.text}"),
        {"role": "user", "content": "Also remember the budget code is BX-3310."},
        *_round(1, "ok"), *_round(2, "ok"),
        {"role": "user", "content": "Now fix the release pipeline."},
    ]
    messages += _round(3, "ok") + _round(4, "ok")
    first = engine.compress(messages, current_tokens=50_000)
    engine.on_session_start("session-2", boundary_reason="compression", old_session_id="session-1")
    second = engine.compress([*first, *_round(5, "ok"), *_round(6, "ok"), *_round(7, "ok")], current_tokens=50_000)
    assert engine.compression_count == 2 and engine.compaction.degradation_reason is None

    records = _records(project)
    assert len(records) == 2
    for record in records:
        assert_conforms(record)
        assert SECRET.text not in json.dumps(record)
    state = records[-1]["continuity"]
    words = [item["text"] for item in state["user_words"]["items"]]
    # the second region holds none of the first user messages: they come from the lineage
    assert "Never deploy on Fridays; the staging host is stg-7.internal." in words
    assert "Also remember the budget code is BX-3310." in words
    commands = [c["command"] for c in records[0]["continuity"]["anchors"]["commands"]]
    assert commands[0] == "make check-0" and records[0]["continuity"]["anchors"]["commands"][0]["exit_code"] == 2
    assert any("build-4821 FAILED" in line for line in records[0]["continuity"]["anchors"]["errors"])

    block = next(m["content"] for m in second if is_baton_message(m) and m["role"] == "user")
    assert continuity.RECALL_LINE in block and '"Also remember the budget code is BX-3310."' in block
    brief = block.split("\n\n", 1)[1].rsplit("\n\n", 1)[0]
    assert get_runtime().main.count_text(brief).tokens <= BRIEF_MAX + 2  # the join newlines

    assert block.count("Also remember the budget code is BX-3310.") == 1  # the cycle's section only
    resumed = json.loads(engine.handle_tool_call("baton_resume", {"max_tokens": 4000}))
    assert 'User said: "Never deploy on Fridays; the staging host is stg-7.internal."' in resumed["brief"]["text"]

    found = _call(engine, mode="search", query="build-4821")
    assert found["ok"] and found["hits"][0]["tool_name"] == "terminal", found
    assert "make check-0" in found["hits"][0]["arguments"]
    expanded = _call(engine, mode="expand", ref=found["hits"][0]["ref"], budget_tokens=4000)
    assert expanded["ok"] and expanded["complete"]
    assert "build-4821 FAILED: checksum mismatch in bundle-9f3c2a7b" in expanded["text"]
    assert SECRET.text not in json.dumps(expanded) and "[REDACTED" in expanded["text"]


def test_recall_tool_errors_are_json(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project)
    assert _call(engine, mode="search", query="anything") == {"ok": True, "mode": "search", "query": "anything",
                                                              "found": False, "hits": []}
    for args, kind in [({"mode": "search", "query": "  "}, "input_error"), ({"mode": "search"}, "input_error"),
                       ({"mode": "expand", "ref": "msg-0000000000000000"}, "not_found"),
                       ({"mode": "expand", "ref": "msg-1", "budget_tokens": 10**9}, "input_error"),
                       ({"mode": "delete"}, "input_error")]:
        answer = _call(engine, **args)
        assert answer["ok"] is False and answer["error"]["kind"] == kind, (args, answer)


def test_recall_reads_the_bound_session_store(project: Path, qwen3_env: Path, tmp_path: Path) -> None:
    from hermes_state import SessionDB

    db = SessionDB(tmp_path / "state.db")
    db.create_session("parent", source="cli")
    db.append_message("parent", role="user", content="The invoice id is INV-20931.")
    db.end_session("parent", "compression")
    db.create_session("child", source="cli", parent_session_id="parent")
    engine = _engine(project)
    engine.bind_session_state(session_db=db, session_id="child")
    assert copy.deepcopy(engine).recall_binding.session_db is db  # a copy borrows the store, never copies its connection
    assert engine.get_status()["recall"]["source"] == "hermes session store"
    hit = _call(engine, mode="search", query="INV-20931")["hits"][0]
    assert hit["role"] == "user" and "INV-20931" in hit["snippet"]
    engine.bind_session_state(session_db=None, session_id="child")
    assert _call(engine, mode="search", query="INV-20931")["hits"] == []  # the in-process index never saw it
    assert engine.get_status()["recall"]["source"] == "in-process index"


def test_an_embedder_in_config_ranks_a_paraphrase_after_compaction(project: Path, qwen3_env: Path) -> None:
    """Through the engine as Hermes drives it: ``baton.embedder`` in config, a compaction queues the region's
    vectors off the request path, status says hybrid, and a paraphrase finds the statement in one search."""
    from batontest.embedding_standin import EmbeddingStandin

    from baton_engine.recall import dense

    with EmbeddingStandin() as server:
        engine = started_engine(project, load_settings(hermes_block={
            "fresh_tail_tokens": 600, "embedder": {"backend": "openai", "url": server.url, "model": "toy"}}))
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Staging pgbouncer settled: DB_PORT=6543."},
            *(m for n in range(6) for m in _round(n, f"Review note {n}: rename the helper in module {n}.")),
            {"role": "user", "content": "Now fix the release pipeline."}]
        engine.compress(messages, current_tokens=50_000)
        dense.wait_idle()
        assert server.requests, "the compaction queued the region's vectors"
        assert engine.get_status()["recall"]["ranking"] == "hybrid (openai:toy)"
        lineage = engine.get_status()["recall"]["lineage"]
        assert lineage["rows_embedded"] > 0 and lineage["rows_pending"] == 0, lineage
        found = _call(engine, mode="search", query="which socket does the pre-production pooler listen on?")
    assert "DB_PORT=6543" in found["hits"][0]["snippet"]
