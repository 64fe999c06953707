"""Tool answers go into the transcript: none may echo a pasted secret back (objective, refs, tool names, items).

Every corpus sample goes through each echoing path of one agent's tools (``Agent.tool_handler``, through a fake
host); the answer keeps its shape and says what it did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.secrets_corpus import SAMPLES, SecretSample
from batontest.started_agent import new_agent, settings

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, set_runtime

MESSAGES = [{"role": "user", "content": "Rotate the deploy credentials"}]


@pytest.fixture
def agent(project: Path) -> Agent:
    set_runtime(BatonRuntime(settings()))
    built = new_agent(project)
    built.session_started("redaction-session", model=None, rotated=False, platform=None, conversation_id=None)
    return built


def call(agent: Agent, name: str, args: Any) -> tuple[str, dict[str, Any]]:
    answer = agent.tool_handler.handle(name, args, MESSAGES)
    return answer, json.loads(answer)


def leaked(answer: str, sample: SecretSample) -> list[str]:
    return [secret[:12] + "..." for secret in sample.secrets if secret in answer]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_objective_answer_is_redacted(agent: Agent, sample: SecretSample) -> None:
    answer, data = call(agent, "baton_capture", {"kind": "objective", "objective": f"Deploy with {sample.text}"})
    assert data["ok"] and data["kind"] == "objective"
    assert leaked(answer, sample) == []
    assert data["objective"].startswith("Deploy with ") and "[REDACTED:" in data["objective"]
    assert agent.compaction.objective == f"Deploy with {sample.text}".strip()  # kept in memory, redacted when persisted


def test_echoed_refs_and_tool_names_are_redacted(agent: Agent) -> None:
    for sample in SAMPLES:
        answer, data = call(agent, "baton_resume", {"ref": sample.text})
        assert data["ok"] is False and data["error"]["kind"] in ("not_found", "input_error", "policy_blocked"), data
        assert leaked(answer, sample) == [], f"baton_resume echoed {sample.name}"
        answer, data = call(agent, f"baton_{sample.text}", {})
        assert data["ok"] is False and data["error"]["message"].startswith("unknown Baton tool")
        assert leaked(answer, sample) == [], f"unknown-tool error echoed {sample.name}"


def test_every_item_kind_answer_is_redacted(agent: Agent) -> None:
    items = {
        "decision": lambda s: {"decision": f"use {s.text}", "rationale": s.text},
        "evidence": lambda s: {"claim": "login works", "type": "command", "ref": "make login", "result": s.text},
        "failed_attempt": lambda s: {"attempt": s.text, "outcome": f"401 for {s.text}"},
        "open_item": lambda s: {"description": f"rotate {s.text}", "priority": "high"},
    }
    for index, sample in enumerate(SAMPLES):
        kind = list(items)[index % len(items)]
        answer, data = call(agent, "baton_capture", {"kind": kind, "item": items[kind](sample)})
        assert data["ok"], data
        assert data["redactions"], f"{sample.name}: no redaction recorded"
        assert leaked(answer, sample) == [], f"baton_capture {kind} echoed {sample.name}"
    answer, data = call(agent, "baton_status", {})
    assert data["ok"] is not False and all(not leaked(answer, s) for s in SAMPLES)
