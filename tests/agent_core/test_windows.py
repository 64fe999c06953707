"""Per-agent windows: each agent budgets its own requests against its own window (tools, counts, route), whatever
other agents are built or run beside it, and a window a provider's refusal states becomes its route's.

Why through ``Agent`` with a fake host: the budget is the core's (``RequestBudgeter.on_request``); how Hermes hands
each agent its engine (a deep copy, the middleware's lookup) is tested in ``tests/hermes/test_windows.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import unconfirmed_cap
from batontest.hosted_agents import (
    BASE_URL, MESSAGES, MODEL, installed, new_agent, qwen3_tokens, route_runtime, switch_model,
)
from batontest.threads import run_in_threads

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.refusal import parse_refusal

CONFIGURED = 131072
SMALL, LARGE = 65536, 200000
ASKED = 250000  # more than any window: the answer is the window minus the prompt


@pytest.fixture
def runtime() -> Iterator[BatonRuntime]:
    """Qwen3 counts the host's configured model at its server (the main route)."""
    with installed(route_runtime(CONFIGURED)) as runtime:
        yield runtime


def agent_at(project: Path, window: int, session_id: str) -> Agent:
    return new_agent(project, MODEL, window, base_url=BASE_URL, provider="custom", session_id=session_id)


def sent_cap(agent: Agent, messages: list[dict[str, Any]] = MESSAGES,
             tools: list[dict[str, Any]] | None = None) -> int | None:
    """The output cap of the request the agent sends (None: left as asked)."""
    request = {"model": MODEL, "messages": messages, "max_tokens": ASKED, **({"tools": tools} if tools else {})}
    rewritten = agent.on_request(request, model=MODEL, base_url=BASE_URL, provider="custom")
    return None if rewritten is None else rewritten["max_tokens"]


def test_each_agent_budgets_against_its_own_window_whatever_agents_come_after(
        project: Path, runtime: BatonRuntime) -> None:
    prompt = qwen3_tokens(runtime, MESSAGES)
    small = agent_at(project, SMALL, "session-small")
    large = agent_at(project, LARGE, "session-large")
    assert sent_cap(small) == unconfirmed_cap(SMALL, prompt)
    assert sent_cap(large) == unconfirmed_cap(LARGE, prompt)
    assert small.threshold_tokens < large.threshold_tokens
    for n in range(3):  # later agents (other windows) change nothing of the first ones, nor the host's window
        agent_at(project, 32_768 * (n + 1), f"later-{n}")
    assert runtime.context_length == CONFIGURED
    assert sent_cap(small) == unconfirmed_cap(SMALL, prompt), "a new agent reset another agent's window"
    assert sent_cap(large) == unconfirmed_cap(LARGE, prompt)
    assert small.requests.ledger is not large.requests.ledger


def test_eight_concurrent_agents_never_see_each_others_state(project: Path, runtime: BatonRuntime) -> None:
    """Threads, one agent each: different tools, windows and conversations; every budget is its own."""
    agents, expected = [], []
    for i in range(8):
        tools = [{"type": "function", "function": {"name": f"tool_{i}_{j}", "description": "d" * (40 * i),
                                                   "parameters": {"type": "object", "properties": {}}}}
                 for j in range(i + 1)]
        messages = [*MESSAGES, {"role": "assistant", "content": f"agent {i} " * (50 * (i + 1))},
                    {"role": "user", "content": "next"}]
        window = 64_000 + 9_000 * i
        agents.append((agent_at(project, window, f"session-{i}"), messages, tools))
        expected.append(unconfirmed_cap(window, qwen3_tokens(runtime, messages, tools)))
    assert len(set(expected)) == 8
    results: dict[int, list[int | None]] = {i: [] for i in range(8)}
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        agent, messages, tools = agents[i]
        barrier.wait()
        for _ in range(5):
            results[i].append(sent_cap(agent, messages, tools))

    run_in_threads(run, 8, timeout=120)
    assert {i: set(values) for i, values in results.items()} == {i: {expected[i]} for i in range(8)}
    frames = [agent.requests.ledger.frame for agent, _, _ in agents]
    assert [len(frame.tools) for frame in frames] == list(range(1, 9))


def test_a_refusal_states_the_window_and_the_next_request_fits(project: Path, runtime: BatonRuntime,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The host says LARGE, the server serves SMALL: its refusal's window becomes this route's, and the host's own
    (larger) number set again does not undo it; another route starts over. The terminal is told once, and status
    lists the line."""
    prompt = qwen3_tokens(runtime, MESSAGES)
    agent = agent_at(project, LARGE, "s")
    assert sent_cap(agent) == unconfirmed_cap(LARGE, prompt)
    refusal = parse_refusal(f"This model's maximum context length is {SMALL} tokens. However, you requested "
                            f"{LARGE} tokens ({prompt} in the messages, {LARGE - prompt} in the completion). "
                            "Please reduce the length of the messages or completion.")
    assert refusal is not None and refusal.window == SMALL
    agent.observe_refusal(refusal)
    switch_model(agent, MODEL, LARGE, base_url=BASE_URL, provider="custom")  # the host's own retry path
    assert sent_cap(agent) == SMALL - prompt  # the refusal also confirmed the count
    status = agent.status()
    assert status["window"]["effective"] == SMALL and status["window"]["source"] == "provider refusal"
    assert status["verification"]["refusals"] == 1 and status["verification"]["verdict"] == "confirmed"
    assert agent.threshold_tokens <= SMALL
    said = [line for line in capsys.readouterr().err.splitlines() if "larger than the window" in line]
    assert len(said) == 1 and said[0].startswith("baton: ")
    assert (f"the fake window {LARGE:,} is larger than the window the server has ({SMALL:,}, provider refusal); "
            f"Baton budgets against {SMALL:,}. Set the fake window setting to {SMALL}") in said[0]
    assert status["notices"] == [said[0].removeprefix("baton: ")]
    switch_model(agent, "other-model", LARGE, base_url="http://127.0.0.1:11/v1", provider="custom")
    assert agent.status()["window"]["effective"] == LARGE  # another server: what it refused says nothing
