"""Anti-thrash on one scale: with 50 tool schemas (~25k Qwen3 tokens) the trigger and the post-compaction
size are both the FULL request, through compress() then should_compress(), never by setting attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent

from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
from baton_engine.hermes.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
WINDOW = 64_000
SYSTEM = {"role": "system", "content": "You are Hermes, a careful coding agent. " * 40}


def fifty_tools() -> list[dict[str, Any]]:
    properties = {f"option_{k}": {"type": "string", "description": f"how option {k} changes the call " * 6}
                  for k in range(8)}
    return [{"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool {i} does work. " * 12,
                                              "parameters": {"type": "object", "properties": properties}}}
            for i in range(50)]


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


def send(activation: Activation, agent: LoopAgent, messages: list[dict[str, Any]]) -> int:
    """The middleware sees the agent's real request; returns that request's exact size."""
    request = {"model": "qwen3", "messages": [SYSTEM, *messages], "tools": agent.tools, "max_tokens": 4096}
    in_agent(agent, activation.llm_request, request=request, model="qwen3", base_url="http://127.0.0.1:9/v1")
    return agent.context_compressor.ledger.memo.tokens


def setup(project: Path, trigger: int) -> tuple[Activation, LoopAgent]:
    set_runtime(BatonRuntime(load_settings(hermes_block={"fallback_token_threshold": trigger,
                                                         "fresh_tail_tokens": 2000})))
    activation = Activation()
    activation.activate()
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", WINDOW, base_url="http://127.0.0.1:9/v1", provider="custom")
    return activation, LoopAgent(engine, fifty_tools())


def test_fifty_tool_schemas_are_20_to_30k_tokens(qwen3_env: Path) -> None:
    set_runtime(BatonRuntime(load_settings()))
    counted = get_runtime().counter().backend.count_chat({"messages": [SYSTEM], "tools": fifty_tools()})
    assert counted.exact and 20_000 <= counted.tokens <= 30_000, counted.tokens


def test_compaction_that_gets_below_the_trigger_waits_for_real_growth(project: Path, qwen3_env: Path) -> None:
    activation, agent = setup(project, trigger=40_000)
    engine = agent.context_compressor
    try:
        messages = conversation(18)
        size = send(activation, agent, messages)
        assert size >= 40_000 and engine.should_compress(size)
        out = engine.compress(messages, current_tokens=size)
        post = engine.policy.post_compaction_tokens
        assert post is not None and 25_000 < post < 40_000  # the full request: tools + system + block + tail
        assert engine.policy.stuck is None
        engine.last_prompt_tokens = -1  # what Hermes does after every compaction
        after = send(activation, agent, out)
        assert abs(after - post) < 200  # the measured size is what the next request really is
        decision, why = engine.should_compress_info(post + 1_000)
        assert decision is False and why is None and "below trigger" in engine.last_decision
        assert engine.should_compress(40_000 + 1) is True  # real growth past the trigger compacts again
    finally:
        activation.deactivate()


def test_compaction_that_cannot_get_below_the_trigger_is_not_repeated_at_every_check(
        project: Path, qwen3_env: Path) -> None:
    """Trigger 20k < the ~26k fixed part: the compaction is marked stuck and only real growth repeats it."""
    activation, agent = setup(project, trigger=20_000)
    engine = agent.context_compressor
    try:
        messages = conversation(6)
        size = send(activation, agent, messages)
        assert engine.should_compress(size)
        out = engine.compress(messages, current_tokens=size)
        post = engine.policy.post_compaction_tokens
        assert post is not None and post >= 20_000 and "still at or above the trigger" in engine.policy.stuck
        for _ in range(5):  # Hermes asks several times per turn: never yes without growth
            decision, why = engine.should_compress_info(send(activation, agent, out))
            assert decision is False and "cooldown" in why and "still at or above the trigger" in why
        status = engine.get_status()["cooldown"]
        assert status["stuck"] and status["growth_needed"] == 2_000
        assert engine.should_compress(post + 2_000) is True  # bounded: growth of a tenth of the trigger
    finally:
        activation.deactivate()
