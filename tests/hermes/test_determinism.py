"""Same input and same state (store contents AND clock) -> byte-identical compress() output.

Two copies of one project (copied at the same path, since the project id is the path's hash) each get one
compaction of the same transcript at the same pinned runtime clock; a different clock or content must give a
different record id. Real git project, real Qwen3 tokenizer, real store.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.hermes_home import initialised_project

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.handoff import ids
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
PINNED = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
REQUEST = "Fix the ledger import."


def _conversation(request: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    for index in range(12):
        call_id = f"call_{index}"
        messages += [
            {"role": "assistant", "content": f"Step {index}: editing src/app.py.", "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "write_file", "arguments": json.dumps({"path": "src/app.py"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": " ".join(f"line{index}-{n}" for n in range(300))},
        ]
    return messages


@pytest.fixture
def session(tmp_path: Path, qwen3_env: Path) -> tuple[Path, BatonContextEngine]:
    """A project whose session captured a decision, kept aside (files + engine) to restore before every run.

    The engine is deep-copied per run, as Hermes copies the registered engine for every agent.
    """
    root = initialised_project(tmp_path / "project")
    engine = started_engine(root, window=32768, clock=lambda: PINNED)
    answer = json.loads(engine.handle_tool_call(
        "baton_capture", {"kind": "decision", "item": {"decision": "Keep the ledger in SQLite",
                                                       "rationale": "one file, no server"}},
        messages=_conversation(REQUEST)[:1]))
    assert answer["ok"], answer
    saved = tmp_path / "pristine"
    shutil.copytree(root, saved, symlinks=True)
    return saved, engine


def _compress_on_copy(session: tuple[Path, BatonContextEngine], clock: Callable[[], datetime],
                      request: str = REQUEST) -> tuple[list[dict[str, Any]], BatonContextEngine]:
    """Restore the project and the engine to the saved state, then one compaction with ``clock`` installed."""
    pristine, template = session
    root = template.project.explicit
    shutil.rmtree(root)
    shutil.copytree(pristine, root, symlinks=True)
    set_runtime(BatonRuntime(load_settings(), clock=clock))
    engine = copy.deepcopy(template)
    result = engine.compress(_conversation(request), current_tokens=20000)
    assert engine.compaction.degradation_reason is None, engine.compaction.degradation_detail
    return result, engine


def test_same_state_and_clock_give_identical_bytes(session: tuple[Path, BatonContextEngine]) -> None:
    first, engine = _compress_on_copy(session, lambda: PINNED)
    second, again = _compress_on_copy(session, lambda: PINNED)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    record_id = engine.compaction.last_handoff["id"]
    assert record_id == again.compaction.last_handoff["id"]
    assert ids.is_uuid7(record_id)
    assert ids.uuid7_datetime(record_id) == PINNED.replace(microsecond=890000)
    block = next(m["content"] for m in first if str(m.get("content", "")).startswith("[Baton handoff"))
    assert f"captured {ids.format_timestamp(PINNED)}" in block
    stored = json.loads(next((engine.project.explicit / ".baton" / "handoffs").glob(
        f"*--{record_id[-8:]}.json")).read_text())
    # every timestamp the cycle wrote into the new record is the pinned clock's
    assert {stored["created_at"], stored["updated_at"], stored["validation"]["validated_at"]} == {
        ids.format_timestamp(PINNED)}


def test_a_different_clock_or_content_gives_a_different_id(session: tuple[Path, BatonContextEngine]) -> None:
    _, base = _compress_on_copy(session, lambda: PINNED)
    later = PINNED + timedelta(milliseconds=1)
    _, shifted = _compress_on_copy(session, lambda: later)
    _, other = _compress_on_copy(session, lambda: PINNED, "Fix the ledger export.")
    assert len({base.compaction.last_handoff["id"], shifted.compaction.last_handoff["id"], other.compaction.last_handoff["id"]}) == 3
    assert ids.uuid7_datetime(shifted.compaction.last_handoff["id"]) == later


def test_a_repeat_in_the_same_store_gets_a_fresh_id(session: tuple[Path, BatonContextEngine]) -> None:
    """Same content and clock, but the store already holds that id: the next derived candidate, no collision."""
    _, first = _compress_on_copy(session, lambda: PINNED)
    again = copy.deepcopy(session[1])  # same engine state, project NOT restored: the first record is stored
    again.compress(_conversation(REQUEST), current_tokens=20000)
    assert again.compaction.degradation_reason is None, again.compaction.degradation_detail
    assert again.compaction.last_handoff["id"] != first.compaction.last_handoff["id"]
    assert again.compaction.last_handoff["id"][-8:] != first.compaction.last_handoff["id"][-8:]
    assert ids.uuid7_datetime(again.compaction.last_handoff["id"]) == PINNED
    stored = {p.name[-13:-5] for p in (first.project.explicit / ".baton" / "handoffs").glob("*.json")}
    assert {first.compaction.last_handoff["id"][-8:], again.compaction.last_handoff["id"][-8:]} <= stored
