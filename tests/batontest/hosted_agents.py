"""One agent's Baton as a host drives it, through the fake host, counting with the real Qwen3 tokenizer (offline).

Why: the core's window, budget and compaction tests check exact figures, so they count as a host's configured
tokenizer would (``assets.qwen3_dir``), in a runtime that knows the host's main route and window (``NoView``), and
they drive ``Agent`` with the calls a host makes when an agent starts and when its model or provider changes
(Hermes: ``update_model`` and ``on_session_start``), without Hermes installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from batontest import assets
from batontest.fake_host import FakeHost

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, NoView, set_runtime
from baton_engine.settings import BatonSettings, load_settings

THRESHOLD_PERCENT = 0.75  # Hermes' default, as its engine starts
MODEL, BASE_URL = "qwen3-test", "http://127.0.0.1:9/v1"  # the host's configured main route
MESSAGES = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


def qwen3_settings(**block: Any) -> BatonSettings:
    """Settings counting with the Qwen3 tokenizer (the hf backend over the local files), plus ``block``'s."""
    return load_settings({}, {"tokenizer": {"backend": "hf", "path": str(assets.qwen3_dir())}, **block})


def route_runtime(context_length: int) -> BatonRuntime:
    """A Qwen3 runtime whose host configured ``MODEL`` at ``BASE_URL`` with ``context_length`` (its main route)."""
    return BatonRuntime(qwen3_settings(), NoView(model=MODEL, base_url=BASE_URL, context_length=context_length))


@contextmanager
def installed(runtime: BatonRuntime) -> Iterator[BatonRuntime]:
    """``runtime`` as the process runtime for the block; the previous one back, and ``runtime`` closed, after it."""
    previous = set_runtime(runtime)
    try:
        yield runtime
    finally:
        set_runtime(previous)
        runtime.close()


def qwen3_tokens(runtime: BatonRuntime, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]] | None = None) -> int:
    """The exact Qwen3 size of a chat request of ``messages`` (and ``tools``): what the server counts."""
    counted = runtime.counter().backend.count_chat({"messages": messages, **({"tools": tools} if tools else {})})
    assert counted.exact and counted.tokens is not None
    return counted.tokens


def switch_model(agent: Agent, model: str, window: int, *, base_url: str | None = None, provider: str | None = None,
                 api_mode: str | None = None) -> None:
    """What a host does when the agent's model or provider changes (or is first set): the route moves, the window
    and threshold follow. ``base_url`` "" clears the server (a provider without one), None keeps it."""
    agent.requests.move_route(agent.route.moved(model=model, base_url=base_url, provider=provider,
                                                api_mode=api_mode, why="model switch"))
    agent.requests.set_context_length(window)


def start_session(agent: Agent, session_id: str, *, model: str | None = None) -> None:
    """A new CLI session of the agent (not a rotation)."""
    agent.session_started(session_id, model=model, rotated=False, platform="cli", conversation_id=None)


def new_agent(project: Path, model: str, window: int, *, base_url: str | None = None, provider: str | None = None,
              session_id: str | None = None) -> Agent:
    """An agent working in ``project`` on ``model`` with ``window``, its session started when ``session_id`` is
    given."""
    agent = Agent(FakeHost(project), project, threshold_percent=THRESHOLD_PERCENT, adapter_version="fake-1")
    switch_model(agent, model, window, base_url=base_url, provider=provider)
    if session_id is not None:
        start_session(agent, session_id, model=model)
    return agent


def agent_conversation(agent: int, turns: int) -> list[dict[str, Any]]:
    """Agent ``agent``'s own plan, ``turns`` steps long: every message says whose it is (no two agents' alike)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": f"You are agent {agent}."}]
    for n in range(turns):
        out += [{"role": "user", "content": f"agent {agent}: step {n} of the plan"},
                {"role": "assistant", "content": (f"agent {agent} did step {n} " * 5).strip()}]
    return out
