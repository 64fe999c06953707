"""Per-agent windows: each deep-copied engine budgets its own agent's requests; building an engine changes
nothing shared (it used to set the process-wide window to 131072 until ``update_model`` was called)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton_engine.hermes.config import HermesView
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
from baton_engine.hermes.runtime import BatonRuntime, set_runtime
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONFIGURED = "qwen3-test", "http://127.0.0.1:9/v1", 131072
SMALL, LARGE = 65536, 200000
ASKED = 250000  # more than any window: the clamp's answer is the window minus the prompt
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


def runtime_for(view: HermesView) -> BatonRuntime:
    installed = BatonRuntime(load_settings(), view)
    set_runtime(installed)
    return installed


@pytest.fixture
def active(qwen3_env: Path) -> Iterator[tuple[Activation, BatonRuntime]]:
    runtime = runtime_for(HermesView(engine="baton", model=MODEL, base_url=BASE_URL, context_length=CONFIGURED))
    activation = Activation()
    assert activation.activate() == []
    yield activation, runtime
    activation.deactivate()


def agent(registered: BatonContextEngine, model: str, window: int, session_id: str) -> BatonContextEngine:
    """What Hermes does per agent: deep-copy the registered engine, tell it the model, start the session."""
    engine = copy.deepcopy(registered)
    engine.update_model(model, window, base_url=BASE_URL, provider="custom")
    engine.on_session_start(session_id, platform="cli", model=model)
    return engine


def sent_max_tokens(activation: Activation, model: str = MODEL, **context: Any) -> int | None:
    request = {"model": model, "messages": MESSAGES, "max_tokens": ASKED}
    answer = activation.llm_request(request=request, original_request=copy.deepcopy(request), model=model,
                                    base_url=BASE_URL, provider="custom", **context)
    return None if answer is None else answer["request"]["max_tokens"]


def test_two_agents_with_different_windows_each_get_their_own_budget(
        project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = runtime.count(MESSAGES).tokens
    assert prompt is not None and runtime.count(MESSAGES).exact
    registered = BatonContextEngine(project_dir=project)
    small = agent(registered, MODEL, SMALL, "session-small")
    large = agent(registered, MODEL, LARGE, "session-large")
    BatonContextEngine(project_dir=project)  # a later engine (another agent being built) changes nothing
    assert sent_max_tokens(activation, session_id="session-small") == SMALL - prompt
    assert sent_max_tokens(activation, session_id="session-large") == LARGE - prompt
    assert (small.context_length, large.context_length) == (SMALL, LARGE)
    assert small.threshold_tokens < large.threshold_tokens
    # Hermes rotates the session id at compaction: the agent keeps its window under the new id.
    small.on_session_start("session-small-2", boundary_reason="compression", old_session_id="session-small")
    assert sent_max_tokens(activation, session_id="session-small-2") == SMALL - prompt
    # An unknown session on the configured route falls back to the route's last window, then the config.
    assert sent_max_tokens(activation, session_id="no-such-session") == LARGE - prompt


def test_constructing_an_engine_has_no_side_effect_on_the_runtime(
        project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = runtime.count(MESSAGES).tokens
    assert sent_max_tokens(activation) == CONFIGURED - prompt
    engine = agent(BatonContextEngine(project_dir=project), MODEL, SMALL, "s1")
    assert sent_max_tokens(activation) == SMALL - prompt
    for _ in range(3):
        BatonContextEngine(project_dir=project)
    assert runtime.context_length == CONFIGURED
    assert sent_max_tokens(activation) == SMALL - prompt, "a new engine reset the agent's window"
    clone = copy.deepcopy(engine)  # deepcopy-safe: the window is plain data on the engine
    assert (clone.context_length, clone.threshold_tokens) == (engine.context_length, engine.threshold_tokens)


def test_requests_without_a_session_id_use_the_window_of_their_route(project: Path, qwen3_env: Path) -> None:
    runtime = runtime_for(HermesView(engine="baton", base_url=BASE_URL, context_length=CONFIGURED))  # any model
    activation = Activation()
    activation.activate()
    try:
        registered = BatonContextEngine(project_dir=project)
        agent(registered, "small-model", SMALL, "a")
        agent(registered, "large-model", LARGE, "b")
        prompt = runtime.count(MESSAGES).tokens
        assert sent_max_tokens(activation, model="small-model") == SMALL - prompt
        assert sent_max_tokens(activation, model="large-model") == LARGE - prompt
        assert sent_max_tokens(activation, model="unseen-model") == CONFIGURED - prompt
    finally:
        activation.deactivate()


def test_the_route_guard_still_skips_other_models(project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    activation, _runtime = active
    agent(BatonContextEngine(project_dir=project), "summary-model", SMALL, "aux")
    assert sent_max_tokens(activation, model="summary-model", session_id="aux") is None
