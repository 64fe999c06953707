"""One agent's Baton (``agent/agent.Agent``) on a fake host at the start of a session, with its runtime installed:
what ``engines.started_engine`` gives Hermes' engine, without Hermes.

Why: the compaction cycle, recall, the tools, reclaim and a session's lifecycle are core; a test of them needs an
agent in a project, on a route and window, after its session started (as a host's start-up makes it), and nothing
of Hermes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from batontest import assets
from batontest.fake_host import FakeHost

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.settings import BatonSettings, load_settings

ADAPTER_VERSION = "fake-1"
THRESHOLD_PERCENT = 0.75  # what Hermes' ContextEngine sets, as every host's default


def qwen3_tokenizer() -> dict[str, str]:
    """The settings' ``tokenizer`` block of the real Qwen3 tokenizer (hf backend, offline)."""
    return {"backend": "hf", "path": str(assets.qwen3_dir())}


def settings(**block: Any) -> BatonSettings:
    """Settings from a ``baton:`` block alone (no BATON_* variable reaches them)."""
    return load_settings({}, block or None)


def new_agent(project: Path) -> Agent:
    """An agent whose project is ``project`` (also its host's working directory)."""
    return Agent(FakeHost(project), project, threshold_percent=THRESHOLD_PERCENT, adapter_version=ADAPTER_VERSION)


def configured_agent(project: Path, baton: BatonSettings | None = None, *, window: int = 65536,
                     clock: Callable[[], datetime] | None = None, model: str = "qwen3") -> Agent:
    """Install a runtime with ``baton`` (default: ``settings()``) and return an agent for ``project`` on ``model``
    with ``window``, before its session starts (as a host configures it at start-up)."""
    set_runtime(BatonRuntime(baton or settings(), clock=clock))
    agent = new_agent(project)
    agent.requests.move_route(agent.route.moved(model=model, why="start-up"))
    agent.requests.set_context_length(window)
    return agent


def started_agent(project: Path, baton: BatonSettings | None = None, *, window: int = 65536,
                  clock: Callable[[], datetime] | None = None, session_id: str = "session-1", platform: str = "cli",
                  conversation_id: str | None = None, model: str = "qwen3") -> Agent:
    """``configured_agent``, after its session ``session_id`` started on ``platform`` (in ``conversation_id``)."""
    agent = configured_agent(project, baton, window=window, clock=clock, model=model)
    agent.session_started(session_id, model=None, rotated=False, platform=platform, conversation_id=conversation_id)
    return agent
