"""Anti-thrash on one scale: with 50 tool schemas (~25k Qwen3 tokens) the trigger and the post-compaction
size are both the FULL request, through compress() then should_compress(), never by setting attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent

from baton_engine.agent.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
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
    return agent.context_compressor.requests.ledger.memo.tokens


def setup(project: Path, trigger: int, window: int = WINDOW) -> tuple[Activation, LoopAgent]:
    set_runtime(BatonRuntime(load_settings(hermes_block={"fallback_token_threshold": trigger,
                                                         "fresh_tail_tokens": 2000})))
    activation = Activation()
    activation.activate()
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", window, base_url="http://127.0.0.1:9/v1", provider="custom")
    return activation, LoopAgent(engine, fifty_tools())


def test_fifty_tool_schemas_are_20_to_30k_tokens(qwen3_env: Path) -> None:
    set_runtime(BatonRuntime(load_settings()))
    counted = get_runtime().counter().backend.count_chat({"messages": [SYSTEM], "tools": fifty_tools()})
    assert counted.exact and 20_000 <= counted.tokens <= 30_000, counted.tokens


def test_compaction_that_gets_below_the_trigger_waits_for_real_growth(project: Path, qwen3_env: Path) -> None:
    """Trigger 80k in a 128k window: above the floor of this ~30k frame (twice frame + block + tail + the
    unanswered share), so it is used as configured."""
    activation, agent = setup(project, trigger=80_000, window=128_000)
    engine = agent.context_compressor
    try:
        messages = conversation(40)
        size = send(activation, agent, messages)
        assert size >= 80_000 and engine.should_compress(size)
        assert engine.limits().trigger == 80_000 and not engine.limits().raised
        out = engine.compress(messages, current_tokens=size)
        post = engine.compaction.policy.post_compaction_tokens
        assert post is not None and 25_000 < post < 40_000  # the full request: tools + system + block + tail
        assert engine.compaction.policy.stuck is None
        engine.last_prompt_tokens = -1  # what Hermes does after every compaction
        after = send(activation, agent, out)
        assert abs(after - post) < 200  # the measured size is what the next request really is
        decision, why = engine.should_compress_info(post + 1_000)
        assert decision is False and why is None and "below trigger" in engine.compaction.last_decision
        assert engine.should_compress(80_000 + 1) is True  # real growth past the trigger compacts again
    finally:
        activation.deactivate()


def test_a_trigger_below_the_fixed_part_is_raised_once_with_a_warning_and_the_compaction_gets_below_it(
        project: Path, qwen3_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Trigger 20k < the ~30k fixed part: raised to the floor (here the ceiling of the 64k window), said once;
    the compaction then ends below it, so Hermes' repeated checks never compact again without growth."""
    activation, agent = setup(project, trigger=20_000)
    engine = agent.context_compressor
    try:
        messages = conversation(6)
        size = send(activation, agent, messages)
        limits = engine.limits()
        fixed = engine.requests.ledger.fixed[1]
        assert 20_000 < fixed < 30_000 and limits.raised and limits.configured_trigger == 20_000
        assert limits.trigger == min(2 * (fixed + 1_400 + 2_000 + 2_048), limits.ceiling)
        assert engine.should_compress(size) is False  # below the raised trigger
        messages = conversation(17)  # ~61k: past the raised trigger, inside the window
        size = send(activation, agent, messages)
        assert size >= limits.trigger and engine.should_compress(size)
        out = engine.compress(messages, current_tokens=size)
        post = engine.compaction.policy.post_compaction_tokens
        assert post is not None and post < limits.trigger and engine.compaction.policy.stuck is None
        for _ in range(5):  # Hermes asks several times per turn: never yes without growth
            decision, why = engine.should_compress_info(send(activation, agent, out))
            assert decision is False and why is None and "below trigger" in engine.compaction.last_decision
        raised = [r for r in caplog.records if "below the smallest workable trigger" in r.getMessage()]
        assert len(raised) == 1 and "fallback_token_threshold to at least" in raised[0].getMessage()
        status = engine.get_status()["trigger"]
        assert status["raised"] is True and status["tokens"] == limits.trigger and status["floor"] >= 20_000
    finally:
        activation.deactivate()
