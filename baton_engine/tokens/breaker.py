"""A circuit breaker around any tokenizer backend: a failing tokenizer is asked once per cool-off, not per count.

A hanging vLLM ``/tokenize`` costs a full timeout per call; retried on every count it stalled a session for
minutes. After a failure the breaker fails fast (``CircuitOpen``, a ``CannotCount`` with a safe message) for the
cool-off, then lets ONE probe through (half-open; concurrent callers keep failing fast); success closes the
circuit, failure re-opens it for twice the previous period, up to ``max_cool_off_seconds``. A
``RequestNotCountable`` (one request the healthy backend cannot render) never trips it; an answer that is not a
usable ``TokenCount`` (``MalformedCount``) does, like any other failure. It wraps a backend the
way httpx composes retries around a transport, so a third-party backend gets it without code of its own.

With ``deadline_seconds`` every call is also bounded in time (``tokens.deadline``): a call that overruns is a
failure like any other (``CountTimedOut``), so one overrun costs the deadline once per cool-off. For a server
backend the deadline is a backstop behind the backend's own HTTP timeout (``count_deadline``: twice it), which
stays the one that normally ends a hanging call; an in-process backend's overrun is stopped.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from baton_engine.tokens.contract import (
    CannotCount,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    checked_count,
)
from baton_engine.tokens.deadline import run_within

# Chosen from benchmarks/tokens/breaker_bench.py: a healthy probe is cheap next to the timeout a hanging server costs per
# probe, so a cool-off that doubles to a cap bounds the wall time a long hang takes while still coming back soon
# after an outage ends; a shorter start costs more timeouts, a higher cap stays in fallback longer. The figures:
# benchmarks/FINDINGS.md, "Figures behind the code's constants", circuit breaker.
DEFAULT_COOL_OFF_SECONDS = 60.0
DEFAULT_MAX_COOL_OFF_SECONDS = 300.0
# The longest an in-process count (hf, tiktoken, a third party's) may take: 1.5x the slowest of 200 cold hf counts
# of the largest realistic prompt (145k Qwen3 tokens: 6.7 s, p50 3.3 s) on a 2-core machine at load ~15, so a real
# count never trips it, while a template that loops costs 10 s once per cool-off (benchmarks/host/route_start_bench.py;
# benchmarks/FINDINGS.md, "Figures behind the code's constants", count deadline).
LOCAL_COUNT_DEADLINE_SECONDS = 10.0
# A server backend's own timeout ends a hanging call; the breaker's deadline only catches a backend that ignores it.
SERVER_DEADLINE_FACTOR = 2.0

LOGGER = logging.getLogger("baton_engine.tokens")
State = Literal["closed", "open", "half_open"]
_T = TypeVar("_T")


class CircuitOpen(CannotCount):
    """The breaker refused the call without asking the backend (message names an error type and seconds only)."""


def count_deadline(remote: bool, timeout_seconds: float) -> float:
    """How long the breaker lets one call of a backend run: a server's (``remote``) own ``timeout_seconds`` stays
    primary (the breaker's is ``SERVER_DEADLINE_FACTOR`` times it); an in-process backend has no timeout of its own,
    so ``LOCAL_COUNT_DEADLINE_SECONDS``."""
    return timeout_seconds * SERVER_DEADLINE_FACTOR if remote else LOCAL_COUNT_DEADLINE_SECONDS


@dataclass(frozen=True)
class BreakerState:
    """What status output shows: no prompt text, no exception messages."""

    state: State
    consecutive_failures: int
    last_error_type: str | None
    retry_in_seconds: float


class CircuitBreaker(TokenizerBackend):
    """Wraps ``inner``; thread-safe (the lock guards state only, never a backend call); copy/pickle-safe."""

    def __init__(
        self,
        backend: TokenizerBackend,
        *,
        cool_off_seconds: float = DEFAULT_COOL_OFF_SECONDS,
        max_cool_off_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        deadline_seconds: float | None = None,
    ) -> None:
        """``max_cool_off_seconds`` bounds the back-off; None: the larger of the default and ``cool_off_seconds``.
        ``deadline_seconds`` bounds each call (None: unbounded)."""
        if not (math.isfinite(cool_off_seconds) and cool_off_seconds >= 0):
            raise ValueError("cool_off_seconds must be a finite number >= 0")
        if max_cool_off_seconds is None:
            max_cool_off_seconds = max(DEFAULT_MAX_COOL_OFF_SECONDS, cool_off_seconds)
        if not (math.isfinite(max_cool_off_seconds) and max_cool_off_seconds >= cool_off_seconds):
            raise ValueError("max_cool_off_seconds must be finite and >= cool_off_seconds")
        if deadline_seconds is not None and not (math.isfinite(deadline_seconds) and deadline_seconds > 0):
            raise ValueError("deadline_seconds must be a finite number > 0 or None")
        self._deadline = deadline_seconds
        self._inner = backend
        self._cool_off = float(cool_off_seconds)
        self._max_cool_off = float(max_cool_off_seconds)
        self._clock = clock
        self._lock = threading.Lock()
        self._state: State = "closed"
        self._failures = 0
        self._error_type: str | None = None
        self._reopen_at = 0.0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if self._state == "half_open":  # the probe belonged to the original; the copy may probe again
            self._state = "open"

    @property
    def inner(self) -> TokenizerBackend:
        """The wrapped backend, for attributes of its own (e.g. the vLLM backend's ``max_model_len_mismatch``)."""
        return self._inner

    @property
    def remote(self) -> bool:  # type: ignore[override]
        return bool(getattr(self._inner, "remote", False))

    @property
    def source(self) -> str:
        return self._inner.source

    @property
    def max_model_len(self) -> int | None:
        return self._inner.max_model_len

    def clear_cache(self) -> None:
        self._inner.clear_cache()

    def close(self) -> None:
        self._inner.close()

    def count_chat(self, request: ChatRequest) -> TokenCount:
        return self._call(lambda: checked_count(self._inner.count_chat(request)))

    def count_text(self, text: str) -> TokenCount:
        return self._call(lambda: checked_count(self._inner.count_text(text)))

    def state(self) -> BreakerState:
        with self._lock:
            retry = max(0.0, self._reopen_at - self._clock()) if self._state == "open" else 0.0
            return BreakerState(self._state, self._failures, self._error_type, retry)

    def _bounded(self, action: Callable[[], _T]) -> _T:
        if self._deadline is None:
            return action()
        return run_within(action, self._deadline, stop=not self.remote, on_stopped=self._inner.clear_cache)

    def _call(self, action: Callable[[], _T]) -> _T:
        probe = self._admit()
        try:
            result = self._bounded(action)
        except RequestNotCountable:
            self._settle(None)  # the backend answered: it is healthy
            raise
        except Exception as exc:
            self._settle(type(exc).__name__)
            raise
        except BaseException:  # KeyboardInterrupt, ...: no verdict; let a later call probe
            if probe:
                with self._lock:
                    self._state = "open"
            raise
        self._settle(None)
        return result

    def _admit(self) -> bool:
        """Raise ``CircuitOpen`` or let the call through; True when this call is the half-open probe."""
        with self._lock:
            if self._state == "closed":
                return False
            if self._state == "open":
                wait = self._reopen_at - self._clock()
                if wait <= 0:
                    self._state = "half_open"
                    return True
                raise CircuitOpen(
                    f"tokenizer unavailable: circuit open after {self._error_type}; retry in {math.ceil(wait)}s")
            raise CircuitOpen(f"tokenizer unavailable: circuit half-open after {self._error_type}; probe in progress")

    def _settle(self, error_type: str | None) -> None:
        """Record a verdict; transitions are logged with type names and seconds only."""
        with self._lock:
            if error_type is None:
                if self._state != "closed":
                    LOGGER.info("tokenizer circuit closed: backend answered again")
                self._state, self._failures = "closed", 0
                return
            self._error_type = error_type
            if self._state == "open":
                return  # a call admitted before the circuit opened: the same outage, no extra back-off
            self._failures += 1
            period = min(self._cool_off * 2 ** min(self._failures - 1, 32), self._max_cool_off)
            self._state, self._reopen_at = "open", self._clock() + period
            LOGGER.warning("tokenizer circuit open after %s (failure %d); failing fast for %g s",
                           error_type, self._failures, period)
