"""The circuit breaker's state machine on an injectable clock, and what a hanging tokenizer costs behind it."""

from __future__ import annotations

import copy
import logging
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from baton_engine.tokens.breaker import BreakerState, CircuitBreaker, CircuitOpen
from baton_engine.tokens.contract import CannotCount, RequestNotCountable, TokenCount
from baton_engine.tokens.counter import TokenCounter
from batontest.faulty_backends import GarbageTokenizer
from test_counter import SECRET, WordBackend

REQUEST = {"messages": [{"role": "user", "content": f"four words {SECRET} here"}]}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def breaker(backend: WordBackend, clock: Clock, cool_off: float = 30.0, max_cool_off: float = 300.0) -> CircuitBreaker:
    return CircuitBreaker(backend, cool_off_seconds=cool_off, max_cool_off_seconds=max_cool_off, clock=clock)


def tripped(clock: Clock, failure: BaseException | None = None) -> tuple[WordBackend, CircuitBreaker]:
    """A breaker that has just opened on one ``failure`` (default ``CannotCount``) of its backend, which still
    fails."""
    failure = failure if failure is not None else CannotCount("down")
    backend = WordBackend(fail=failure)
    wrapped = breaker(backend, clock)
    with pytest.raises(type(failure)):
        wrapped.count_text("a")
    return backend, wrapped


def test_closed_breaker_passes_counts_and_delegates() -> None:
    backend = WordBackend(max_model_len=4096)
    wrapped = breaker(backend, Clock())
    assert wrapped.count_chat(REQUEST) == TokenCount(4, True, "words", 4096)
    assert wrapped.count_text("a b") == TokenCount(2, True, "words", 4096)
    assert wrapped.source == "words" and wrapped.inner is backend and wrapped.max_model_len is None
    assert wrapped.state() == BreakerState("closed", 0, None, 0.0)


def test_a_failure_opens_the_circuit_and_calls_fail_fast_with_a_safe_message() -> None:
    clock = Clock()
    backend = WordBackend(fail=ConnectionError(f"upstream said {SECRET}"))
    wrapped = breaker(backend, clock)
    with pytest.raises(ConnectionError):
        wrapped.count_chat(REQUEST)
    clock.now += 10
    for call in (lambda: wrapped.count_chat(REQUEST), lambda: wrapped.count_text(SECRET)):
        with pytest.raises(CircuitOpen) as caught:
            call()
        assert isinstance(caught.value, CannotCount)
        assert str(caught.value) == "tokenizer unavailable: circuit open after ConnectionError; retry in 20s"
        assert SECRET not in str(caught.value)
    assert backend.calls == 1
    assert wrapped.state() == BreakerState("open", 1, "ConnectionError", 20.0)


def test_one_probe_after_the_cool_off_success_closes() -> None:
    clock = Clock()
    backend, wrapped = tripped(clock)
    clock.now += 30
    backend.fail = None
    assert wrapped.count_text("a b c").tokens == 3  # the probe
    assert wrapped.state() == BreakerState("closed", 0, "CannotCount", 0.0)
    assert wrapped.count_text("a").tokens == 1 and backend.calls == 3


def test_a_failed_probe_reopens_with_doubling_back_off_up_to_the_bound() -> None:
    clock = Clock()
    backend = WordBackend(fail=TimeoutError())
    wrapped = breaker(backend, clock, cool_off=30, max_cool_off=100)
    periods = []
    for _ in range(5):
        with pytest.raises(TimeoutError):
            wrapped.count_text("a")
        periods.append(wrapped.state().retry_in_seconds)
        clock.now += periods[-1]
    assert periods == [30, 60, 100, 100, 100]
    assert backend.calls == 5 and wrapped.state().consecutive_failures == 5


def test_concurrent_callers_fail_fast_while_the_probe_runs() -> None:
    clock = Clock()
    backend, wrapped = tripped(clock)
    clock.now += 31
    backend.fail, backend.gate = None, threading.Event()
    backend.entered.clear()
    with ThreadPoolExecutor(1) as pool:
        probe = pool.submit(wrapped.count_text, "probe")
        assert backend.entered.wait(5)
        assert wrapped.state().state == "half_open"
        for _ in range(3):
            with pytest.raises(CircuitOpen, match="half-open after CannotCount; probe in progress"):
                wrapped.count_text("other")
        backend.gate.set()
        assert probe.result(5).tokens == 1
    assert backend.calls == 2 and wrapped.state().state == "closed"


def test_request_not_countable_never_trips_the_breaker() -> None:
    class ShapeRefused(RequestNotCountable):
        pass

    backend = WordBackend(fail=ShapeRefused("server cannot count tool-call histories"))
    wrapped = breaker(backend, Clock())
    for _ in range(3):
        with pytest.raises(ShapeRefused):
            wrapped.count_chat(REQUEST)
    assert backend.calls == 3 and wrapped.state() == BreakerState("closed", 0, None, 0.0)


def test_vllm_tool_history_refusal_is_request_not_countable() -> None:
    baton_vllm = pytest.importorskip("baton_vllm")
    assert issubclass(baton_vllm.ToolCallHistoryUnsupported, RequestNotCountable)


def test_a_request_not_countable_probe_closes_the_circuit() -> None:
    clock = Clock()
    backend, wrapped = tripped(clock, OSError())
    clock.now += 30
    backend.fail = RequestNotCountable("this one cannot be rendered")
    with pytest.raises(RequestNotCountable):
        wrapped.count_chat(REQUEST)
    assert wrapped.state().state == "closed"  # the server answered: it is up


def test_calls_in_flight_when_the_circuit_opened_do_not_extend_it() -> None:
    clock = Clock()
    backend = WordBackend(fail=TimeoutError())
    backend.gate = threading.Event()
    wrapped = breaker(backend, clock)
    with ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(wrapped.count_text, str(i)) for i in range(4)]
        while backend.calls < 4:
            time.sleep(0.01)
        backend.gate.set()
        assert all(isinstance(call.exception(5), TimeoutError) for call in calls)
    assert wrapped.state() == BreakerState("open", 1, "TimeoutError", 30.0)


def test_an_interrupted_probe_lets_a_later_call_probe() -> None:
    clock = Clock()
    backend, wrapped = tripped(clock, OSError())
    clock.now += 30
    backend.fail = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        wrapped.count_text("a")
    backend.fail = None
    assert wrapped.count_text("a").tokens == 1


class Plain(WordBackend):
    """WordBackend without its threading events, so it can be copied like a real backend."""

    def __init__(self) -> None:
        self.calls, self.fail, self.result, self._max_model_len, self.gate = 0, OSError(), "words", None, None

    def _words(self, text):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return TokenCount(len(text().split()), True, self.source)


def test_copies_are_independent_and_have_their_own_lock() -> None:
    now = [100.0]  # a function clock: copies share it (a function deep-copies to itself)
    wrapped = CircuitBreaker(Plain(), cool_off_seconds=30, clock=lambda: now[0])
    with pytest.raises(OSError):
        wrapped.count_text("a")
    copied = copy.deepcopy(wrapped)
    assert copied.state() == BreakerState("open", 1, "OSError", 30.0)
    copied.inner.fail = None  # type: ignore[attr-defined]
    now[0] += 30
    assert copied.count_text("a").tokens == 1
    assert copied.state().state == "closed" and wrapped.state().state == "open"
    restored = pickle.loads(pickle.dumps(CircuitBreaker(Plain())))
    assert restored.state().state == "closed"
    with pytest.raises(OSError):
        restored.count_text("x y")
    assert restored.state().state == "open"


def test_the_back_off_bound_defaults_to_at_least_the_cool_off() -> None:
    clock = Clock()
    wrapped = CircuitBreaker(WordBackend(fail=OSError()), cool_off_seconds=900, clock=clock)
    with pytest.raises(OSError):
        wrapped.count_text("a")
    assert wrapped.state().retry_in_seconds == 900


def test_invalid_cool_offs_are_rejected() -> None:
    for bad in ({"cool_off_seconds": -1}, {"cool_off_seconds": float("nan")},
                {"cool_off_seconds": 30, "max_cool_off_seconds": 10}):
        with pytest.raises(ValueError):
            CircuitBreaker(WordBackend(), **bad)  # type: ignore[arg-type]


class HangingBackend(WordBackend):
    """Sleeps for its "timeout", then fails, like a vLLM server that accepts and never answers."""

    def __init__(self, hang_seconds: float) -> None:
        super().__init__(fail=CannotCount("vLLM server did not answer within 0.05 s"))
        self.hang_seconds = hang_seconds

    def _words(self, text):  # type: ignore[no-untyped-def]
        time.sleep(self.hang_seconds)
        return super()._words(text)


def test_a_hanging_tokenizer_costs_one_timeout_per_period_across_many_counts() -> None:
    clock = Clock()
    backend = HangingBackend(0.05)
    counter = TokenCounter(backend, cool_off_seconds=30, clock=clock)
    requests = [{"messages": [{"role": "user", "content": f"message {i}"}]} for i in range(40)]
    for period in range(3):  # 3 periods of ~30 s, one count a second
        for second in range(30):
            result = counter.count_chat(requests[second])
            assert result.tokens is not None and not result.exact and result.source == "rough+margin"
            clock.now += 1
        clock.now += 30 * (2 ** period) - 30  # the back-off doubles the next period
    assert backend.calls == 3  # one timeout per period, not 90
    assert counter.breaker_state().state == "open"
    assert "CircuitOpen: tokenizer unavailable: circuit open after CannotCount" in (
        counter.stats().last_fallback_reason or "")


def test_counter_does_not_wrap_a_breaker_twice() -> None:
    clock = Clock()
    backend = WordBackend(fail=OSError())
    wrapped = CircuitBreaker(backend, cool_off_seconds=5, clock=clock)
    counter = TokenCounter(wrapped, cool_off_seconds=999)
    assert counter.backend is backend
    counter.count_text("a")
    assert counter.breaker_state() == wrapped.state() and wrapped.state().retry_in_seconds == 5


def test_an_outage_logs_one_warning_with_type_names_only(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    backend = WordBackend(fail=ConnectionError(f"upstream said {SECRET}"))
    counter = TokenCounter(backend, clock=clock)
    with caplog.at_level(logging.INFO, logger="baton_engine.tokens"):
        for i in range(20):
            counter.count_chat({"messages": [{"role": "user", "content": f"{SECRET} {i}"}]})
        clock.now += 60
        backend.fail = None
        counter.count_text("back")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2  # one outage: the breaker opening, and the one count that met the failure
    assert warnings[0] == "tokenizer circuit open after ConnectionError (failure 1); failing fast for 60 s"
    assert warnings[1].startswith("count fell back kind=chat backend=words error=ConnectionError tokens=")
    assert "tokenizer circuit closed: backend answered again" in [r.getMessage() for r in caplog.records]
    assert not any(SECRET in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("garbage", [None, "12", TokenCount(-3, True, "garbage"), TokenCount(4, "yes", "garbage")])  # type: ignore[arg-type]
def test_a_backend_answering_garbage_trips_the_breaker(garbage: object) -> None:
    """A malformed answer is a backend failure: after one, the counter stops asking until the cool-off ends."""
    clock = Clock()
    backend = GarbageTokenizer(garbage)
    counter = TokenCounter(backend, cool_off_seconds=30, clock=clock)
    first = counter.count_chat(REQUEST)
    assert not first.exact and first.fallback_reason == "garbage: MalformedCount"
    state = counter.breaker_state()
    assert state.state == "open" and state.last_error_type == "MalformedCount"
    counter.count_chat({"messages": [{"role": "user", "content": "another request"}]})
    assert backend.calls == 1  # failing fast: the garbage backend was not asked again
    clock.now += 30
    counter.count_text("probe")
    assert backend.calls == 2 and counter.breaker_state().consecutive_failures == 2
