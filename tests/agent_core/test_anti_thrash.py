"""Anti-thrash on one scale: with 50 tool schemas (~25k Qwen3 tokens) the trigger and the post-compaction size are
both the FULL request, through a compaction then the decision to compact, never by setting attributes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from batontest.hosted_agents import installed, new_agent, qwen3_settings, qwen3_tokens

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime

WINDOW = 64_000
BASE_URL = "http://127.0.0.1:9/v1"
SYSTEM = {"role": "system", "content": "You are Hermes, a careful coding agent. " * 40}


def fifty_tools() -> list[dict[str, Any]]:
    properties = {f"option_{k}": {"type": "string", "description": f"how option {k} changes the call " * 6}
                  for k in range(8)}
    return [{"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool {i} does work. " * 12,
                                              "parameters": {"type": "object", "properties": properties}}}
            for i in range(50)]


TOOLS = fifty_tools()


def conversation(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Review every module and fix what is broken."}]
    for i in range(rounds):
        call = f"call_{i}"
        messages += [
            {"role": "assistant", "content": f"Reading part {i}.", "tool_calls": [{"id": call, "type": "function",
             "function": {"name": "tool_1", "arguments": json.dumps({"option_0": f"part {i}"})}}]},
            {"role": "tool", "tool_call_id": call, "content": " ".join(f"r{i}-token{n}" for n in range(300))},
        ]
    return messages


def send(agent: Agent, messages: list[dict[str, Any]]) -> int:
    """The agent's real request, budgeted; returns that request's exact size."""
    request = {"model": "qwen3", "messages": [SYSTEM, *messages], "tools": TOOLS, "max_tokens": 4096}
    agent.on_request(request, model="qwen3", base_url=BASE_URL)
    counted = agent.requests.ledger.memo
    assert counted is not None and counted.tokens is not None
    return counted.tokens


@contextmanager
def agent_with(project: Path, trigger: int, window: int = WINDOW) -> Iterator[Agent]:
    """An agent on Qwen3 whose configured trigger is ``trigger`` (``fallback_token_threshold``), for the block."""
    settings = qwen3_settings(fallback_token_threshold=trigger, fresh_tail_tokens=2000)
    with installed(BatonRuntime(settings)):
        yield new_agent(project, "qwen3", window, base_url=BASE_URL, provider="custom")


def test_fifty_tool_schemas_are_20_to_30k_tokens() -> None:
    with installed(BatonRuntime(qwen3_settings())) as runtime:
        assert 20_000 <= qwen3_tokens(runtime, [SYSTEM], TOOLS) <= 30_000


def test_compaction_that_gets_below_the_trigger_waits_for_real_growth(project: Path) -> None:
    """Trigger 80k in a 128k window: above the floor of this ~30k frame (twice frame + block + tail + the
    unanswered share), so it is used as configured."""
    with agent_with(project, trigger=80_000, window=128_000) as agent:
        messages = conversation(40)
        size = send(agent, messages)
        assert size >= 80_000 and agent.compaction_decision(size, awaiting_usage=False).compact
        assert agent.limits().trigger == 80_000 and not agent.limits().raised
        out = agent.compact(messages, size, None, False).messages
        post = agent.compaction.policy.post_compaction_tokens
        assert post is not None and 25_000 < post < 40_000  # the full request: tools + system + block + tail
        assert agent.compaction.policy.stuck is None
        after = send(agent, out)  # sent before the provider's usage of it came back
        assert abs(after - post) < 200  # the measured size is what the next request really is
        held = agent.compaction_decision(post + 1_000, awaiting_usage=True)
        assert not held.compact and not held.held and "below trigger" in agent.compaction.last_decision
        assert agent.compaction_decision(80_000 + 1, awaiting_usage=True).compact  # real growth compacts again


def test_a_trigger_below_the_fixed_part_is_raised_once_with_a_warning_and_the_compaction_gets_below_it(
        project: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Trigger 20k < the ~30k fixed part: raised to the floor (here the ceiling of the 64k window), said once;
    the compaction then ends below it, so the host's repeated checks never compact again without growth."""
    with agent_with(project, trigger=20_000) as agent:
        messages = conversation(6)
        size = send(agent, messages)
        limits = agent.limits()
        assert agent.requests.ledger.fixed is not None
        fixed = agent.requests.ledger.fixed[1]
        assert 20_000 < fixed < 30_000 and limits.raised and limits.configured_trigger == 20_000
        assert limits.trigger == min(2 * (fixed + 1_400 + 2_000 + 2_048), limits.ceiling)
        assert not agent.compaction_decision(size, awaiting_usage=False).compact  # below the raised trigger
        messages = conversation(17)  # ~61k: past the raised trigger, inside the window
        size = send(agent, messages)
        assert size >= limits.trigger and agent.compaction_decision(size, awaiting_usage=False).compact
        out = agent.compact(messages, size, None, False).messages
        post = agent.compaction.policy.post_compaction_tokens
        assert post is not None and post < limits.trigger and agent.compaction.policy.stuck is None
        for _ in range(5):  # a host asks several times per turn: never yes without growth
            decision = agent.compaction_decision(send(agent, out), awaiting_usage=False)
            assert not decision.compact and not decision.held and "below trigger" in agent.compaction.last_decision
        raised = [r for r in caplog.records if "below the smallest workable trigger" in r.getMessage()]
        assert len(raised) == 1 and "fallback_token_threshold to at least" in raised[0].getMessage()
        trigger = agent.status()["trigger"]
        assert trigger["raised"] is True and trigger["tokens"] == limits.trigger and trigger["floor"] >= 20_000
