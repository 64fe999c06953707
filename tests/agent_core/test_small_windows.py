"""Windows from 4,096 up work: the limits are clamped to the window's size (``policy.Limits.clamped``), a modest
request is sent with a cap that fits, compaction waits until the conversation needs it, and a window the server
states bounds every cap (issue 30, "small windows" and "a window the server states")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.hosted_agents import BASE_URL, MODEL, installed, new_agent, qwen3_tokens, route_runtime

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.policy import MIN_CAP_TOKENS
from baton_engine.refusal import parse_refusal

CONFIGURED = 64_000
ASKED = 65_536  # Hermes' default max_tokens
CONVERSATION = [{"role": "system", "content": "You are Hermes, a coding agent."},
                {"role": "user", "content": "List the files of the project."},
                {"role": "assistant", "content": "The project has a README, a src folder and the tests."},
                {"role": "user", "content": "Open the README."}]


@pytest.fixture
def runtime() -> Iterator[BatonRuntime]:
    with installed(route_runtime(CONFIGURED)) as runtime:
        yield runtime


def agent_at(project: Path, window: int) -> Agent:
    """The host configures 64,000; the server refuses once, stating its real window (vLLM 0.32's text), as after a
    first oversized request."""
    agent = new_agent(project, MODEL, CONFIGURED, base_url=BASE_URL, provider="custom", session_id="small-window")
    refusal = parse_refusal(f"This model's maximum context length is {window} tokens. However, your prompt "
                            f"contains at least {window + 1} input tokens, which exceeds this limit even without "
                            f"any output tokens.")
    assert refusal is not None and refusal.window == window
    agent.observe_refusal(refusal)
    return agent


def send(agent: Agent, messages: list[dict[str, Any]]) -> dict[str, Any]:
    request = {"model": MODEL, "messages": messages, "max_tokens": ASKED}
    return agent.on_request(request, model=MODEL, base_url=BASE_URL, provider="custom") or request


def compacts(agent: Agent, tokens: int) -> bool:
    return agent.compaction_decision(tokens, awaiting_usage=False).compact


@pytest.mark.parametrize("window", [4096, 8192, 16384, 32768])
def test_a_modest_conversation_is_neither_compacted_nor_sent_over_the_window(
        project: Path, runtime: BatonRuntime, window: int) -> None:
    """Issue 30: config 64,000, server 4,096: the decision to compact fired at 394 tokens (ceiling 0) and a
    3-message conversation was compacted. The limits now fit the window: 0 < trigger <= ceiling < window."""
    agent = agent_at(project, window)
    limits = agent.limits()
    assert limits.window == window and 0 < limits.trigger <= limits.ceiling < window
    prompt = qwen3_tokens(runtime, CONVERSATION)
    assert compacts(agent, prompt) is False
    sent = send(agent, CONVERSATION)
    assert MIN_CAP_TOKENS <= sent["max_tokens"] and prompt + sent["max_tokens"] <= window
    assert agent.status()["window"]["effective"] == window


def test_growth_compacts_only_when_the_conversation_needs_it(project: Path, runtime: BatonRuntime) -> None:
    """At 4,096, a conversation that grows by ~60 tokens a turn is not compacted before it reaches the trigger,
    and every request sent fits the window (the provider's usage confirms the counts, as in a host's loop)."""
    agent = agent_at(project, 4096)
    messages = list(CONVERSATION)
    for turn in range(200):
        prompt = qwen3_tokens(runtime, messages)
        if compacts(agent, prompt):
            assert prompt >= agent.limits().trigger, (turn, prompt)
            break
        sent = send(agent, messages)
        real = qwen3_tokens(runtime, sent["messages"])  # what the server counts of the request sent
        assert real + sent["max_tokens"] <= 4096
        agent.observe_response({"prompt_tokens": real, "completion_tokens": 40, "total_tokens": real + 40})
        messages += [{"role": "assistant", "content": f"Step {turn}: the README's section {turn} explains how the "
                                                      f"build is tagged, which checks run before a release and "
                                                      f"who signs the artefacts once the tests pass."},
                     {"role": "user", "content": f"Good, now summarise section {turn + 1} in one line."}]
    else:
        pytest.fail("never reached the trigger")
    assert turn > 5  # not on every request


def test_a_window_the_server_states_bounds_the_cap_even_when_the_prompt_cannot_fit(
        project: Path, runtime: BatonRuntime) -> None:
    """Issue 30: server 16,384, config 64,000: a request whose single message exceeds the window left with
    max_tokens 65,536 (needs_compaction, and the cap was never clamped). Now it carries the smallest cap."""
    agent = agent_at(project, 16384)
    big = [{"role": "system", "content": "You are Hermes."},
           {"role": "user", "content": "Summarise this log:\n" + "\n".join(
               f"2026-11-30T02:{i % 60:02d}:00Z worker[{i % 7}] processed batch {i} in {i % 13} ms"
               for i in range(900))}]
    assert qwen3_tokens(runtime, big) > 16384
    sent = send(agent, big)
    assert sent["max_tokens"] == MIN_CAP_TOKENS  # never the caller's 65,536, never above the window
    assert agent.status()["output_budget"]["last_action"] == "needs_compaction"
