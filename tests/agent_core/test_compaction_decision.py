"""Compact now? The decision's truth table (an explicit request, the token fallback, the window threshold, the
cooldown after a compaction, a host awaiting real usage), the project's detector, and the tool's handoff request.

Why through ``Agent``: the decision is the core's (``Agent.compaction_decision``); how Hermes' ``should_compress``
hooks pass their numbers to it is tested in ``tests/hermes/test_should_compress.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from batontest.hosted_agents import installed, new_agent

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.settings import load_settings

CONTEXT = 100_000  # threshold = min(75,000, 100,000 - 5,120) = 75,000


@contextmanager
def agent_in(project: Path, **block: Any) -> Iterator[Agent]:
    """An agent with a window of ``CONTEXT`` under the settings ``block`` (config.yaml's ``baton:``), for the
    block."""
    with installed(BatonRuntime(load_settings({}, block or None))):
        yield new_agent(project, "m", CONTEXT)


@pytest.mark.parametrize(
    ("block", "policy", "tokens", "awaiting_usage", "expected", "reason"),
    [
        ({}, {}, 10_000, False, False, "below trigger"),
        ({}, {}, 74_999, False, False, "below trigger"),
        ({}, {}, 75_000, False, True, ">= threshold 75000"),
        ({}, {"explicit": True}, 10, False, True, "explicit"),
        ({"fallback_token_threshold": 20_000}, {}, 20_000, False, True, "fallback_token_threshold"),
        ({"fallback_token_threshold": 20_000}, {}, 19_999, False, False, "below trigger"),
        ({}, {}, -1, True, False, "awaiting real usage"),
        ({}, {}, 0, True, False, "awaiting real usage"),
        ({}, {}, 0, False, False, "below trigger"),  # 0 is a size unless the host awaits usage
        # cooldown: after a compaction to 74,000 tokens, 75,000 is not real growth (needs 7,500) ...
        ({}, {"post_compaction_tokens": 74_000}, 75_000, False, False, "cooldown"),
        ({}, {"post_compaction_tokens": 74_000}, 81_500, False, True, ">= threshold"),
        # ... but the explicit request and the hard ceiling (no room for output) bypass it
        ({}, {"post_compaction_tokens": 94_000, "explicit": True}, 95_000, False, True, "explicit"),
        ({}, {"post_compaction_tokens": 94_000}, 96_000, False, True, "output tokens"),
    ],
)
def test_truth_table(tmp_path: Path, block: dict[str, Any], policy: dict[str, Any], tokens: int,
                     awaiting_usage: bool, expected: bool, reason: str) -> None:
    with agent_in(tmp_path, **block) as agent:  # no .baton/: the detector is unavailable
        agent.compaction.policy = replace(agent.compaction.policy, **policy)
        decision = agent.compaction_decision(tokens, awaiting_usage=awaiting_usage)
        assert decision.compact is expected
        assert reason in decision.reason and decision.reason == agent.compaction.last_decision
        assert decision.held is (reason == "cooldown")  # held back at or above the trigger: the host may say why
        assert reason in agent.status()["last_decision"]


def test_detector_recommendation_needs_readiness(project: Path) -> None:
    """Below the token threshold the project's detector decides; it needs an auto-prepare-ready record."""
    config_path = project / ".baton" / "config.json"
    config = json.loads(config_path.read_text())
    config["detector"].update(recommend_threshold=0.3, auto_prepare_threshold=0.3, auto_prepare_min_readiness=0.5)
    config_path.write_text(json.dumps(config))
    with agent_in(project) as agent:
        messages = [{"role": "user", "content": "Build the parser"}]
        decision = agent.compaction_decision(60_000, awaiting_usage=False)
        assert not decision.compact and not decision.held  # no record: readiness None
        assert "no handoff record yet" in " ".join(agent.status()["detector"]["reasons"])
        answer = json.loads(agent.tool_handler.handle("baton_capture", {"kind": "open_item", "item": {
            "description": "parser", "suggested_action": "write it", "acceptance_check": "tests pass"}}, messages))
        assert answer["ok"], answer
        assert agent.compaction_decision(60_000, awaiting_usage=False).compact
        assert "detector pressure" in agent.compaction.last_decision


def test_the_tool_can_request_a_handoff(tmp_path: Path) -> None:
    with agent_in(tmp_path) as agent:
        assert not agent.compaction_decision(10, awaiting_usage=False).compact
        assert json.loads(agent.tool_handler.handle("baton_capture", {"kind": "request_handoff"}, None))["ok"]
        assert agent.compaction_decision(10, awaiting_usage=False).compact
