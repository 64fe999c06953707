"""Same input and same state (store contents AND clock) -> byte-identical compaction output.

Two copies of one project (copied at the same path, since the project id is the path's hash) each get one
compaction of the same transcript at the same pinned runtime clock; a different clock or content must give a
different record id. Real git project, real Qwen3 tokenizer, real store, one agent through a fake host.
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
from batontest.hermes_home import initialised_project
from batontest.started_agent import qwen3_tokenizer, settings, started_agent

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.handoff import ids

PINNED = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
REQUEST = "Fix the ledger import."
Session = tuple[Path, Agent]


def conversation(request: str) -> list[dict[str, Any]]:
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
def session(tmp_path: Path) -> Session:
    """A project whose session captured a decision, kept aside (files + agent) to restore before every run."""
    root = initialised_project(tmp_path / "project")
    agent = started_agent(root, settings(tokenizer=qwen3_tokenizer()), window=32768, clock=lambda: PINNED)
    answer = json.loads(agent.tool_handler.handle(
        "baton_capture", {"kind": "decision", "item": {"decision": "Keep the ledger in SQLite",
                                                       "rationale": "one file, no server"}},
        conversation(REQUEST)[:1]))
    assert answer["ok"], answer
    saved = tmp_path / "pristine"
    shutil.copytree(root, saved, symlinks=True)
    return saved, agent


def compact(agent: Agent, request: str = REQUEST) -> list[dict[str, Any]]:
    return agent.compact(conversation(request), 20000, None, False).messages


def compact_on_copy(session: Session, clock: Callable[[], datetime],
                    request: str = REQUEST) -> tuple[list[dict[str, Any]], Agent]:
    """Restore the project and the agent to the saved state, then one compaction with ``clock`` installed."""
    pristine, template = session
    root = template.project.explicit
    shutil.rmtree(root)
    shutil.copytree(pristine, root, symlinks=True)
    set_runtime(BatonRuntime(settings(tokenizer=qwen3_tokenizer()), clock=clock))
    agent = copy.deepcopy(template)
    result = compact(agent, request)
    assert agent.compaction.degradation_reason is None, agent.compaction.degradation_detail
    return result, agent


def handoff_id(agent: Agent) -> str:
    return agent.compaction.last_handoff["id"]


def test_same_state_and_clock_give_identical_bytes(session: Session) -> None:
    first, agent = compact_on_copy(session, lambda: PINNED)
    second, again = compact_on_copy(session, lambda: PINNED)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    record_id = handoff_id(agent)
    assert record_id == handoff_id(again)
    assert ids.is_uuid7(record_id)
    assert ids.uuid7_datetime(record_id) == PINNED.replace(microsecond=890000)
    block = next(m["content"] for m in first if str(m.get("content", "")).startswith("[Baton handoff"))
    assert f"captured {ids.format_timestamp(PINNED)}" in block
    stored = json.loads(next((agent.project.explicit / ".baton" / "handoffs").glob(
        f"*--{record_id[-8:]}.json")).read_text())
    # every timestamp the cycle wrote into the new record is the pinned clock's
    assert {stored["created_at"], stored["updated_at"], stored["validation"]["validated_at"]} == {
        ids.format_timestamp(PINNED)}


def test_a_different_clock_or_content_gives_a_different_id(session: Session) -> None:
    _, base = compact_on_copy(session, lambda: PINNED)
    later = PINNED + timedelta(milliseconds=1)
    _, shifted = compact_on_copy(session, lambda: later)
    _, other = compact_on_copy(session, lambda: PINNED, "Fix the ledger export.")
    assert len({handoff_id(base), handoff_id(shifted), handoff_id(other)}) == 3
    assert ids.uuid7_datetime(handoff_id(shifted)) == later


def test_a_repeat_in_the_same_store_gets_a_fresh_id(session: Session) -> None:
    """Same content and clock, but the store already holds that id: the next derived candidate, no collision."""
    _, first = compact_on_copy(session, lambda: PINNED)
    again = copy.deepcopy(session[1])  # same agent state, project NOT restored: the first record is stored
    compact(again)
    assert again.compaction.degradation_reason is None, again.compaction.degradation_detail
    assert handoff_id(again) != handoff_id(first)
    assert handoff_id(again)[-8:] != handoff_id(first)[-8:]
    assert ids.uuid7_datetime(handoff_id(again)) == PINNED
    stored = {p.name[-13:-5] for p in (first.project.explicit / ".baton" / "handoffs").glob("*.json")}
    assert {handoff_id(first)[-8:], handoff_id(again)[-8:]} <= stored
