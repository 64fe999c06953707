"""Per-agent budgets as Hermes hands them out: each engine deep-copied from the registered one budgets its own
agent's requests through the ``llm_request`` middleware (found by the calling frame, else by its session id, also
after Hermes' rotation at compaction); building or copying an engine changes nothing shared.

The budgets themselves (windows, a model switch, refusals, calibration, images) are the core's:
``tests/agent_core/test_windows.py``, ``test_model_switch.py``, ``test_calibration.py``, ``test_media.py``."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import active_runtime, unconfirmed_cap

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONFIGURED = "qwen3-test", "http://127.0.0.1:9/v1", 131072
SMALL, LARGE = 65536, 200000
ASKED = 250000  # more than any window: the answer is the window minus the prompt
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


@pytest.fixture
def active(qwen3_env: Path) -> Iterator[tuple[Activation, BatonRuntime]]:
    with active_runtime(MODEL, BASE_URL, CONFIGURED) as both:
        yield both


def new_agent(registered: BatonContextEngine, window: int, session_id: str) -> LoopAgent:
    """What Hermes does per agent: deep-copy the registered engine, tell it the model, start the session."""
    engine = copy.deepcopy(registered)
    engine.update_model(MODEL, window, base_url=BASE_URL, provider="custom")
    engine.on_session_start(session_id, platform="cli", model=MODEL)
    return LoopAgent(engine)


def exact(runtime: BatonRuntime, messages: list[dict[str, Any]]) -> int:
    counted = runtime.counter().backend.count_chat({"messages": messages})
    assert counted.exact
    return counted.tokens


def sent_max_tokens(activation: Activation, agent: LoopAgent | None, **context: Any) -> int | None:
    """The cap of the request the middleware sends, from the agent's loop (its frame) or, without ``agent``, from
    a frame that names none (``context``: what Hermes passes, e.g. ``session_id``)."""
    request = {"model": MODEL, "messages": MESSAGES, "max_tokens": ASKED}
    arguments = {"request": request, "model": MODEL, "base_url": BASE_URL, "provider": "custom", **context}
    answer = (in_agent(agent, activation.llm_request, **arguments) if agent is not None
              else activation.llm_request(**arguments))
    return None if answer is None else answer["request"]["max_tokens"]


def test_two_agents_with_different_windows_each_get_their_own_budget(
        project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    registered = BatonContextEngine(project_dir=project)
    small = new_agent(registered, SMALL, "session-small")
    large = new_agent(registered, LARGE, "session-large")
    BatonContextEngine(project_dir=project)  # a later engine (another agent being built) changes nothing
    assert sent_max_tokens(activation, small) == unconfirmed_cap(SMALL, prompt)
    assert sent_max_tokens(activation, large) == unconfirmed_cap(LARGE, prompt)
    assert small.context_compressor.threshold_tokens < large.context_compressor.threshold_tokens
    # Without the calling frame, the session id finds the agent; it survives Hermes' rotation at compaction.
    small.context_compressor.on_session_start("session-small-2", boundary_reason="compression",
                                              old_session_id="session-small")
    assert sent_max_tokens(activation, None, session_id="session-small-2") == unconfirmed_cap(SMALL, prompt)
    assert sent_max_tokens(activation, None, session_id="no-such-session") is None  # nobody's: left alone


def test_constructing_or_copying_an_engine_has_no_side_effect(project: Path,
                                                              active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    agent = new_agent(BatonContextEngine(project_dir=project), SMALL, "s1")
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(SMALL, prompt)
    for _ in range(3):
        BatonContextEngine(project_dir=project)
    assert runtime.context_length == CONFIGURED
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(SMALL, prompt), "a new engine reset the agent's window"
    clone = copy.deepcopy(agent.context_compressor)  # deepcopy-safe after use: plain data, own ledger
    assert (clone.context_length, clone.threshold_tokens) == (SMALL, agent.context_compressor.threshold_tokens)
    assert clone.requests.ledger is not agent.context_compressor.requests.ledger
