"""One agent's Baton whole (``agent/agent.Agent``) through a fake host, without Hermes: what a host's hooks ask of
it (compact now? a compaction, a session's start, status, the tools, a prune, recall, the compaction line) and the
host's name in the words it writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.fake_host import FakeHost

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import get_runtime


def agent_in(tmp_path: Path) -> Agent:
    return Agent(FakeHost(tmp_path), None, threshold_percent=0.75, adapter_version="fake-1")


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a test."}]
    for turn in range(turns):
        messages += [{"role": "user", "content": f"question {turn}: " + "words " * 40},
                     {"role": "assistant", "content": f"answer {turn}: " + "more words " * 40}]
    return messages


def test_the_decision_to_compact_is_the_policys_and_its_reason_is_kept(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    trigger = agent.limits().trigger
    below = agent.compaction_decision(trigger // 2, awaiting_usage=False)
    assert not below.compact and agent.compaction.last_decision == below.reason
    above = agent.compaction_decision(trigger + 1, awaiting_usage=False)
    assert above.compact and agent.compaction.last_decision == above.reason
    assert not agent.compacts_before_sending(conversation(2), awaiting_usage=False)  # it fits: never compacted


def test_a_session_start_registers_the_agent_and_a_rotation_keeps_its_lineage(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    agent.session_started("first", model="fake-model", rotated=False, platform=None, conversation_id=None)
    assert get_runtime().engines.lookup("first") is agent and agent.route.model == "fake-model"
    agent.session_started("second", model=None, rotated=True, platform=None, conversation_id=None)
    assert agent.compaction.session_id == "second" and agent.compaction.session_rotations == 1
    assert get_runtime().engines.lookup("second") is agent


def test_a_compaction_without_baton_init_keeps_the_recent_turns(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    agent.session_started("session", model="fake-model", rotated=False, platform=None, conversation_id=None)
    messages = conversation(12)
    done = agent.compact(messages, None, None, False)
    assert done.messages and done.messages[-1] == messages[-1]
    assert agent.compaction.degradation_reason == "not_initialised"


def test_a_failed_compaction_raises_to_the_hosts_boundary_whose_fallback_keeps_the_recent_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core raises its bugs (no catch-all of its own); the host's boundary answers ``compact_degraded``: the
    recent messages, pair-safe, recorded as an internal error and cooled down."""
    from baton_engine.compaction import cycle

    agent = agent_in(tmp_path)
    agent.session_started("session", model="fake-model", rotated=False, platform=None, conversation_id=None)

    def broken(*_: Any, **__: Any) -> None:
        raise LookupError("a bug in the cycle")

    monkeypatch.setattr(cycle, "run_cycle", broken)
    messages = conversation(12) + [{"role": "assistant", "content": None,
                                    "tool_calls": [{"id": "c1", "type": "function",
                                                    "function": {"name": "read", "arguments": "{}"}}]},
                                   {"role": "tool", "tool_call_id": "c1", "content": "file text"}]
    with pytest.raises(LookupError):
        agent.compact(messages, None, None, False)
    done = agent.compact_degraded(messages, None)
    assert done.progressed and done.messages[-2:] == messages[-2:] and len(done.messages) < len(messages)
    calls = {call["id"] for m in done.messages for call in m.get("tool_calls") or ()}
    assert all(m["tool_call_id"] in calls for m in done.messages if m.get("role") == "tool")  # pair-safe
    status = agent.status()
    assert status["degradation"] == {**status["degradation"], "reason": "internal_error",
                                     "detail": "internal error: LookupError"}
    assert agent.compaction.failure_cooldown() is not None


def test_status_and_the_tools_speak_of_the_host_by_its_name(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    status = agent.status()
    assert status["window"]["fake_context_length"] == agent.context_length
    assert status["window"]["source"] == "fake window" and status["recall"]["source"] == "in-process index"
    assert {"trigger_tokens", "rearm_tokens"} <= set(status["reclaim"])
    assert {schema["name"] for schema in agent.tool_handler.schemas()} >= {"baton_status"}
    answer = json.loads(agent.tool_handler.handle("baton_status", {}, None))
    assert answer["engine"]["window"]["source"] == "fake window"  # baton_status's part of the agent's status


def test_a_prune_waits_for_its_trigger_and_never_runs_inside_a_compaction(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    messages = conversation(3)
    assert agent.pruner.prune(messages) == (messages, 0)  # far below reclaim_trigger_tokens
    agent.compaction.compacting = True
    assert agent.pruner.prune(messages) == (messages, 0)
    assert agent.pruner.status()["last"] is None


def test_what_a_prune_took_out_is_recalled_from_the_in_process_index(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    agent.session_started("session", model="fake-model", rotated=False, platform=None, conversation_id=None)
    call = {"id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "config/staging.yaml"}'}}
    taken = [{"role": "assistant", "content": "", "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "database:\n  host: db.staging.internal\n  port: 6543\n"}]
    agent.recall_binding.remember_pruned(taken, agent.compaction.session_id)
    answer = agent.recall_binding.recall({"mode": "search", "query": "staging database port"},
                                         agent.compaction.session_id)
    assert answer["ok"] and "port: 6543" in answer["hits"][0]["snippet"]
    assert answer["hits"][0]["tool_name"] == "read_file"


def test_the_compaction_line_names_the_size_the_trigger_and_where_recall_reads(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    line = agent.compaction.starting_line(12_345)
    assert line.startswith("Baton handoff at 12,345 tokens (trigger ")
    assert line.endswith("recallable with baton_recall (in-process index)")


def test_a_locked_session_store_narrows_the_lineage_to_the_session_itself(tmp_path: Path) -> None:
    """The host's store (Hermes' SessionDB is sqlite) may be locked at a session's start: the start completes and
    the lineage is the session alone; any other failure of the store is a bug the host's boundary reports."""
    import sqlite3

    from baton_engine.handoff.capture import hash_session_id

    class LockedStore:
        def get_session(self, _session_id: str) -> dict[str, Any]:
            raise sqlite3.OperationalError("database is locked")

    agent = agent_in(tmp_path)
    agent.session_bound(LockedStore(), None)
    agent.session_started("child", model=None, rotated=False, platform=None, conversation_id=None)
    assert agent.compaction.session_id == "child"
    assert agent.compaction._session_lineage("child") == [hash_session_id("child")]

    class BrokenStore:
        def get_session(self, _session_id: str) -> dict[str, Any]:
            raise KeyError("a bug")

    agent.session_bound(BrokenStore(), None)
    with pytest.raises(KeyError):
        agent.compaction._session_lineage("child")


def test_each_response_of_the_agents_loop_is_a_turn_of_the_detectors_budget(tmp_path: Path) -> None:
    """The detector's turn budget counts the loop's responses (Hermes: ``update_from_response``) on any host; a
    usage reported again by another path (Hermes 0.22's ``on_turn_complete``) is no turn."""
    agent = agent_in(tmp_path)
    agent.observe_response({"prompt_tokens": 120, "completion_tokens": 8})
    agent.observe_response_usage({"prompt_tokens": 120, "completion_tokens": 8})
    agent.observe_response({"prompt_tokens": 160, "completion_tokens": 8})
    assert agent.compaction.turns == 2
