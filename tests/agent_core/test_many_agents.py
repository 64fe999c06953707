"""Many agents in one process, each its own ``Agent`` through a fake host, sharing only the process runtime: ten
agents taking turns never redo each other's work.

Why: memos shared by every agent, with a few chains, made each agent's call redo its whole history once the others
had pushed it out. How Hermes makes an agent's engine (``clone_for_agent``, a deep copy) is Hermes' own:
``tests/hermes/test_agents.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batontest.hosted_agents import agent_conversation
from batontest.started_agent import new_agent, qwen3_tokenizer, settings

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, set_runtime

MODEL, BASE_URL, CONTEXT = "qwen3-test", "http://127.0.0.1:9/v1", 65536
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture(autouse=True)
def qwen3_runtime() -> None:
    set_runtime(BatonRuntime(settings(tokenizer=qwen3_tokenizer())))


def agent_on_route(project: Path) -> Agent:
    agent = new_agent(project)
    agent.requests.move_route(agent.route.moved(model=MODEL, base_url=BASE_URL, provider="custom", why="start-up"))
    agent.requests.set_context_length(CONTEXT)
    return agent


def api_call(agent: Agent, messages: list[dict[str, Any]]) -> None:
    """What a host's loop asks per API call: the pre-request estimate and its scan ahead, compact now?, the
    request's budget."""
    tokens = agent.count_estimate(messages, tools=TOOLS).tokens
    agent.prepare_compaction(messages)
    assert tokens is not None
    agent.compaction_decision(tokens, awaiting_usage=False)
    agent.on_request({"model": MODEL, "messages": messages, "tools": TOOLS, "max_tokens": 1024}, model=MODEL,
                     base_url=BASE_URL)


def test_ten_agents_taking_turns_compute_only_their_new_messages(tmp_path: Path) -> None:
    """Each call projects and hashes only the message its agent added."""
    agents = [agent_on_route(tmp_path) for _ in range(10)]
    histories = [agent_conversation(i, 5) for i in range(10)]
    for agent, history in zip(agents, histories):
        api_call(agent, history)
    for round_ in range(3):
        for i, (agent, history) in enumerate(zip(agents, histories)):
            history.append({"role": "user", "content": f"round {round_} for agent {i}"})
            before = agent.requests.memos.computed()
            api_call(agent, history)
            # one new message, projected + digested for the estimate; the request's view digests it once more
            assert agent.requests.memos.computed() - before == 2
