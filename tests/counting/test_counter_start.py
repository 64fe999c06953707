"""A route's tokenizer starts once, on its own thread, outside the process lock: while it loads, other routes
count as usual and the route's other agents count with estimates (and say so) instead of waiting."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import baton_engine.hermes.runtime as runtime_module
from baton_engine.hermes.config import HermesView
from baton_engine.hermes.runtime import STARTING, BatonRuntime
from baton_engine.settings import load_settings
from baton_engine.tokens.anchor import UsageAnchor
from baton_engine.tokens.counter import counting_mode
from baton_engine.tokens.plugins import Selection
from test_counter import WordBackend

MAIN_MODEL = "qwen3-local"
SLOW_MODEL = "slow-loading-model"
REQUEST = {"messages": [{"role": "user", "content": "four words right here"}]}
QUICK = 2.0  # seconds: what "did not wait" means on a loaded 2-core machine


class ClosableWords(WordBackend):
    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture()
def slow_start(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[Any]]:
    """Backends built by a factory that blocks on the slow route's model until released; every build recorded
    (the model it was for), the backends built after it."""
    release, builds = threading.Event(), []

    def build_backend(config: Any, registry: Any = None) -> tuple[WordBackend, Selection]:
        builds.append(config.model)
        if config.model == SLOW_MODEL:
            release.wait(30)
        backend = ClosableWords()
        builds.append(backend)
        return backend, Selection("words", "test", config.backend)

    monkeypatch.setattr(runtime_module, "build_backend", build_backend)
    return release, builds


def _runtime() -> BatonRuntime:
    baton = {"tokenizer": {"backend": "rough"},
             "tokenizer_routes": [{"match": {"model": SLOW_MODEL}, "backend": "hf", "model": SLOW_MODEL}]}
    return BatonRuntime(load_settings({}, baton), HermesView(engine="baton", model=MAIN_MODEL, context_length=65536))


def _timed(action: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = action()
    return result, time.monotonic() - started


def test_a_slow_start_holds_up_no_other_route_and_no_other_agent(slow_start: Any) -> None:
    release, builds = slow_start
    runtime = _runtime()
    first: list[Any] = []
    starter = threading.Thread(target=lambda: first.append(runtime.for_route(SLOW_MODEL).count_chat(REQUEST)))
    starter.start()  # the first agent on the slow route: it starts the tokenizer and waits for it
    while SLOW_MODEL not in builds:
        time.sleep(0.01)

    other, took = _timed(lambda: runtime.for_route("another-model").count_chat(REQUEST))  # a first build too
    assert took < QUICK and other.exact

    second = runtime.for_route(SLOW_MODEL)
    estimate, took = _timed(lambda: second.count_chat(REQUEST))  # another agent on the slow route: no wait
    assert took < QUICK and counting_mode(estimate) == "rough+margin" and estimate.fallback_reason == STARTING
    assert second.counter_state == "starting" and second.counter_error is None
    assert second.source() == "rough (tokenizer starting)"

    release.set()
    starter.join(10)
    assert first[0].exact and first[0].tokens == 4
    assert second.counter_state == "ready" and second.count_chat(REQUEST).exact
    assert builds.count(SLOW_MODEL) == 1  # started once


def test_an_anchored_agent_keeps_its_anchor_while_its_tokenizer_starts(slow_start: Any) -> None:
    release, builds = slow_start
    runtime = _runtime()
    starter = threading.Thread(target=lambda: runtime.for_route(SLOW_MODEL).counter())
    starter.start()
    anchor = UsageAnchor()
    anchor.observe_exact(REQUEST, 40)
    grown = {"messages": [*REQUEST["messages"], {"role": "assistant", "content": "done"}]}
    while SLOW_MODEL not in builds:
        time.sleep(0.01)
    counted = runtime.for_route(SLOW_MODEL).count_chat(grown, anchor=anchor)
    assert counting_mode(counted) == "anchored" and counted.fallback_reason == STARTING
    release.set()
    starter.join(10)


def test_many_agents_asking_at_once_start_the_tokenizer_once(slow_start: Any) -> None:
    release, builds = slow_start
    runtime = _runtime()
    threads = [threading.Thread(target=lambda: runtime.for_route(SLOW_MODEL).count_chat(REQUEST)) for _ in range(8)]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(10)
    assert builds.count(SLOW_MODEL) == 1


def test_a_tokenizer_still_starting_when_the_runtime_closes_is_closed_once_started(slow_start: Any) -> None:
    release, builds = slow_start
    runtime = _runtime()
    starter = threading.Thread(target=lambda: runtime.for_route(SLOW_MODEL).counter())
    starter.start()
    while SLOW_MODEL not in builds:
        time.sleep(0.01)
    runtime.close()
    release.set()
    starter.join(10)
    assert builds[-1].closed
