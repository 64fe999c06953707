"""One agent's session lifecycle through a fake host: the handoff a session continues noted at start (no brief
rendered), a draft checkpoint at its end (never ready), a reset that keeps the lineage.

Why here: a session's start, end and reset are the core's (``Agent.session_started``, ``session_reset``,
``CompactionRunner.ended``); Hermes' hooks only name them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batontest.records import handoff_records
from batontest.started_agent import configured_agent, settings

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import get_runtime

MESSAGES = [{"role": "user", "content": "Migrate the settings loader"},
            {"role": "assistant", "content": "Read the old loader; two call sites remain."}]


def agent_in(project: Path, **block: Any) -> Agent:
    return configured_agent(project, settings(**block), model="m")


def start(agent: Agent, session_id: str, platform: str | None = None) -> None:
    agent.session_started(session_id, model=None, rotated=False, platform=platform, conversation_id=None)


def compact(agent: Agent, messages: list[dict[str, Any]]) -> None:
    agent.compact(messages, None, None, False)


def detector_recommends_from(project: Path, threshold: float) -> None:
    path = project / ".baton" / "config.json"
    config = json.loads(path.read_text())
    config["detector"]["recommend_threshold"] = threshold
    path.write_text(json.dumps(config))


def test_a_resumed_session_continues_its_own_handoff_without_counting(project: Path) -> None:
    """Session start reads the store only: no brief is rendered (no tokenizer call, no git) until asked.
    A session resumed by id (``/resume``) continues the handoff it wrote."""
    first = agent_in(project)
    start(first, "one", "cli")
    compact(first, [*MESSAGES, {"role": "user", "content": "continue"}])
    ready = first.status()["latest_handoff"]
    again = agent_in(project)
    counter = get_runtime().counter()
    calls = counter.stats().calls
    start(again, "one", "cli")
    assert counter.stats().calls == calls and again.requests.ledger.counted == 0
    assert again.status()["latest_handoff"]["id"] == ready["id"]
    compact(again, [*MESSAGES, {"role": "user", "content": "next"}])
    assert again.status()["latest_handoff"]["parents"] == [ready["id"]]  # continues its own lineage


def test_a_new_cli_session_starts_its_own_lineage_until_it_resumes(project: Path) -> None:
    """A fresh session on another task must not say "continue of <previous id>" nor carry the previous task's
    decisions; ``baton_resume`` (project-wide on the CLI) is how it takes the lineage up."""
    first = agent_in(project)
    start(first, "one", "cli")
    compact(first, [*MESSAGES, {"role": "user", "content": "continue"}])
    ready = first.status()["latest_handoff"]
    other = agent_in(project)
    start(other, "two", "cli")
    assert other.status()["latest_handoff"] is None
    compact(other, [{"role": "user", "content": "Write the release notes"},
                    {"role": "assistant", "content": "Drafted the notes."}, {"role": "user", "content": "go"}])
    assert other.status()["latest_handoff"]["parents"] == []
    resumer = agent_in(project)
    start(resumer, "three", "cli")
    answer = json.loads(resumer.tool_handler.handle("baton_resume", {"ref": ready["short_id"]}, None))
    assert answer["ok"] and answer["handoff"]["id"] == ready["id"]
    compact(resumer, [*MESSAGES, {"role": "user", "content": "carry on"}])
    assert resumer.status()["latest_handoff"]["parents"] == [ready["id"]]


def test_session_end_writes_a_draft_checkpoint_when_recommended(project: Path) -> None:
    detector_recommends_from(project, 0.05)
    agent = agent_in(project)
    start(agent, "s")
    agent.compaction.ended(MESSAGES, 40_000)
    records = handoff_records(project)
    assert len(records) == 1 and records[0]["status"] == "draft"
    assert records[0]["work"]["objective"] == "Migrate the settings loader"


def test_session_end_respects_the_setting_and_the_detector(project: Path) -> None:
    detector_recommends_from(project, 0.05)
    agent = agent_in(project, auto_checkpoint_on_end=False)
    start(agent, "s")
    agent.compaction.ended(MESSAGES, 40_000)
    quiet = agent_in(project)  # a detector that recommends nothing: no checkpoint
    detector_recommends_from(project, 0.99)
    start(quiet, "q")
    quiet.compaction.ended(MESSAGES, 0)
    assert handoff_records(project) == []
    quiet.compaction.ended("garbage", 0)  # type: ignore[arg-type]  never raises


def test_reset_clears_session_state_but_keeps_lineage(project: Path) -> None:
    agent = agent_in(project)
    start(agent, "s")
    compact(agent, [*MESSAGES, {"role": "user", "content": "go"}])
    handoff = agent.status()["latest_handoff"]
    agent.compaction.objective, agent.compaction.turns = "x", 9
    agent.session_reset()
    assert (agent.compaction.objective, agent.compaction.turns) == (None, 0)
    assert agent.compaction.policy.post_compaction_tokens is None
    assert agent.status()["latest_handoff"] == handoff and agent.compression_count == 1
