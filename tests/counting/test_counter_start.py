"""A route's tokenizer starts once, on its own thread, outside the process lock: while it loads, other routes
count as usual and the route's other agents count with estimates (and say so) instead of waiting."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from baton_engine.agent.ledger import Ledger
import baton_engine.agent.runtime as runtime_module
from baton_engine.agent.runtime import STARTING, BatonRuntime
from baton_engine.hermes.config import HermesView
from baton_engine.request import ProviderRequest
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


def test_background_work_never_starts_the_tokenizer_nor_takes_the_first_requests_wait(slow_start: Any) -> None:
    """Recall's count-ahead runs on a worker thread: were it the first to ask, the real first request would count
    with estimates (and a frame counted then would raise the trigger floor on a guess)."""
    release, builds = slow_start
    runtime = _runtime()
    route = runtime.for_route(SLOW_MODEL)
    assert route.ready_counter() is None and SLOW_MODEL not in builds  # background work: never starts it
    first: list[Any] = []
    starter = threading.Thread(target=lambda: first.append(route.count_chat(REQUEST)))
    starter.start()
    while SLOW_MODEL not in builds:
        time.sleep(0.01)
    ready, took = _timed(route.ready_counter)
    assert ready is None and took < QUICK  # nor waits for it
    release.set()
    starter.join(10)
    assert first[0].exact and first[0].tokens == 4  # the first request still waited for its tokenizer
    assert route.ready_counter() is not None


def test_a_frame_counted_while_the_tokenizer_starts_is_counted_exactly_once_it_is_ready(slow_start: Any) -> None:
    release, builds = slow_start
    runtime = _runtime()
    starter = threading.Thread(target=lambda: runtime.for_route(SLOW_MODEL).counter())
    starter.start()  # the first request takes the wait; the ledger below counts meanwhile
    while SLOW_MODEL not in builds:
        time.sleep(0.01)
    system = {"role": "system", "content": "You are Hermes, a careful coding agent. " * 50}
    ledger = Ledger(frame=ProviderRequest((system,)))
    route = runtime.for_route(SLOW_MODEL)
    estimated = ledger.fixed_tokens(route)
    assert estimated is not None and ledger.fixed is None  # an estimate is not kept
    release.set()
    starter.join(10)
    probe = {"role": "user", "content": "."}
    counter = route.ready_counter()
    assert counter is not None
    exact = (counter.count_chat({"messages": [system, probe]}).tokens
             - counter.count_chat({"messages": [probe]}).tokens)
    assert estimated != exact
    assert ledger.fixed_tokens(route) == exact and ledger.fixed == (ledger.frame.key, exact)
