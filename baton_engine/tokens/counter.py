"""The one place Baton asks for a token count: cache -> circuit breaker -> backend; never raises.

Exact when the backend can count (images and documents, which no tokenizer counts, are taken out and added
at their ``tokens.media`` cost, which makes the count an estimate); else the session's usage-anchored estimate
when one is given and has seen an exact count; else rough + margin; else "unknown". Every backend is wrapped
in a ``CircuitBreaker``, so a failing tokenizer is asked once per cool-off rather than on every count.

Logs carry counts, sources and exception TYPE names only: prompts, exception messages and
tracebacks can hold secrets, so none of them is ever formatted into a record. The one message
that reaches a result is a ``CannotCount``'s (safe by contract): ``fallback_reason`` then says
why, e.g. "server cannot count tool-call histories", where status output needs it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from cachetools import LRUCache

from baton_engine.tokens.anchor import ANCHORED_SOURCE, UsageAnchor
from baton_engine.tokens.breaker import DEFAULT_COOL_OFF_SECONDS, BreakerState, CircuitBreaker, CircuitOpen
from baton_engine.tokens.contract import UNKNOWN_SOURCE, CannotCount, ChatRequest, TokenCount, TokenizerBackend
from baton_engine.tokens.media import split_request
from baton_engine.tokens.request_key import request_key
from baton_engine.tokens.rough import (
    FALLBACK_SOURCE,
    ROUGH_SOURCE,
    estimate_chat_request,
    request_margin,
    estimate_tokens_rough,
)
from baton_engine.tokens.verify import CALIBRATED_SOURCE

LOGGER = logging.getLogger("baton_engine.tokens")
CountingMode = Literal["exact", "calibrated", "anchored", "rough+margin", "estimate", "unknown"]


def counting_mode(count: TokenCount) -> CountingMode:
    """How a count was made, for status. "estimate" is an inexact count without a margin of its own (tiktoken's
    chat framing, a rough plain-text count), to which budgets add the fallback margin."""
    if count.tokens is None:
        return "unknown"
    if count.exact:
        return "exact"
    if count.source == CALIBRATED_SOURCE:
        return "calibrated"
    if count.source == ANCHORED_SOURCE:
        return "anchored"
    if count.source == FALLBACK_SOURCE:
        return "rough+margin"
    return "estimate"


@dataclass(frozen=True)
class CounterStats:
    calls: int = 0
    cache_hits: int = 0
    backend_calls: int = 0
    fallbacks: int = 0
    unknown: int = 0
    last_fallback_reason: str | None = None
    last_max_model_len: int | None = None


def _text_key(text: str) -> str | None:
    if not isinstance(text, str):
        return None
    return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# Whole-request counts remembered (LRU): a sha256 hex key and one TokenCount each, well under 1 KB an entry.
DEFAULT_CACHE_ENTRIES = 256


class TokenCounter:
    """Wraps one backend. Thread-safe; bounded LRU per whole request; failures and estimates are never cached."""

    def __init__(
        self,
        backend: TokenizerBackend,
        *,
        fallback_margin_tokens: int = 1024,
        cache_size: int = DEFAULT_CACHE_ENTRIES,
        cool_off_seconds: float = DEFAULT_COOL_OFF_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        deadline_seconds: float | None = None,
    ):
        """``deadline_seconds`` bounds each backend call (the breaker's, ``breaker.count_deadline``; None: unbounded).
        """
        if fallback_margin_tokens < 0:
            raise ValueError("fallback_margin_tokens must be >= 0")
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self._breaker = (backend if isinstance(backend, CircuitBreaker)
                         else CircuitBreaker(backend, cool_off_seconds=cool_off_seconds, clock=clock,
                                            deadline_seconds=deadline_seconds))
        self._backend = self._breaker.inner
        self._margin = fallback_margin_tokens
        self._cache_size = cache_size
        self._cache: LRUCache[str, TokenCount] = LRUCache(maxsize=max(cache_size, 1))
        self._epoch = 0
        self._lock = threading.Lock()
        self._stats = CounterStats()
        self._source = self._safe_source()

    def _safe_source(self) -> str:
        try:
            source = self._backend.source
        except Exception as exc:  # noqa: BLE001 - backend code (third-party): its name is never worth a failed count
            LOGGER.warning("tokenizer backend source unavailable type=%s", type(exc).__name__)
            return "unknown-backend"
        return source if isinstance(source, str) and source else "unknown-backend"

    @property
    def source(self) -> str:
        return self._source

    @property
    def backend(self) -> TokenizerBackend:
        """The wrapped backend itself (for its own attributes); counts go through the breaker."""
        return self._backend

    def breaker_state(self) -> BreakerState:
        return self._breaker.state()

    def stats(self) -> CounterStats:
        with self._lock:
            return self._stats

    def _record(self, **changes: object) -> None:
        """Add integer deltas; ``last_*`` fields are replaced. Caller holds the lock."""
        updates: dict[str, Any] = {
            name: value if name.startswith("last_") else getattr(self._stats, name) + value
            for name, value in changes.items()
        }
        self._stats = replace(self._stats, **updates)

    def count_chat(self, request: ChatRequest, anchor: UsageAnchor | None = None, *,
                   key: str | None = None) -> TokenCount:
        """Exact count when the backend can (and ``anchor`` observes it); else ``anchor``'s estimate when it has
        one; else rough + margin; else ``tokens=None``. Never raises.
        ``key`` is ``request_key(request)`` when the caller already computed it (one hash per request)."""
        def backend_count() -> TokenCount:
            # Media parts are taken out only when the backend is asked (never on a cache hit: a long history would
            # be walked on every request) and added back at their cost: a bound, so the whole is an estimate.
            text_request, media = split_request(request) if isinstance(request, Mapping) else (request, 0)
            counted = self._breaker.count_chat(text_request)
            if not media:
                return counted
            return replace(counted, tokens=counted.tokens + media, exact=False,  # type: ignore[operator]
                           media_tokens=media)

        counted = self._count(key if key is not None else request_key(request), "chat", backend_count,
                              lambda: estimate_chat_request(request),
                              lambda estimated: request_margin(request, estimated, self._margin))
        if anchor is None:
            return counted
        try:
            if counted.exact:
                anchor.observe_exact(request, counted.tokens)  # type: ignore[arg-type]
                return counted
            if counted.source not in (FALLBACK_SOURCE, UNKNOWN_SOURCE):
                return counted  # an inexact backend's own estimate (tiktoken chat framing): budgets add the margin
            anchored = anchor.estimate(request)
        except Exception as exc:  # noqa: BLE001 - a broken anchor must not break counting
            LOGGER.warning("usage anchor failed type=%s; using the count as it is", type(exc).__name__)
            return counted
        if anchored is None:
            return counted
        LOGGER.debug("counted kind=chat tokens=%d source=%s margin=%d", anchored.tokens, ANCHORED_SOURCE,
                     anchored.margin_tokens)
        return replace(anchored, max_model_len=counted.max_model_len, fallback_reason=counted.fallback_reason)

    def count_text(self, text: str) -> TokenCount:
        """Plain text, no special tokens (brief budgets). Never raises; the fallback is the rough estimate
        WITHOUT the margin (source ``rough``): a fixed per-request margin would make every short text look
        over budget. The margin protects the context window, which only whole-request counts decide."""
        return self._count(
            _text_key(text), "text", lambda: self._breaker.count_text(text), lambda: _estimate_text(text),
            lambda estimated: 0,
        )

    def _count(
        self, key: str | None, kind: str, exact: Callable[[], TokenCount], estimate: Callable[[], int],
        margin: Callable[[int], int],
    ) -> TokenCount:
        """``exact``'s count (cached), or the fallback ``estimate`` when the backend fails; ``margin`` is the margin
        an estimate of n tokens keeps."""
        with self._lock:
            self._record(calls=1)
            cached = self._cache.get(key) if key is not None else None
            if cached is not None:
                self._record(cache_hits=1)
                return cached
            self._record(backend_calls=1)
            epoch = self._epoch
        try:
            result = exact()  # the breaker checked it: a malformed answer is a backend failure
        except Exception as exc:  # noqa: BLE001 - fail open: any backend failure becomes a fallback
            return self._fallback(kind, exc, estimate, margin)
        kept = margin(result.tokens) if result.source == ROUGH_SOURCE else 0  # type: ignore[arg-type]
        if kept:
            # The chosen backend is the estimator itself: same safety margin as a fallback, no failure reason.
            result = TokenCount(result.tokens + kept, False, FALLBACK_SOURCE, result.max_model_len,  # type: ignore[operator]
                                margin_tokens=kept)
        LOGGER.debug("counted kind=%s tokens=%d exact=%s source=%s", kind, result.tokens, result.exact, result.source)
        with self._lock:
            if result.max_model_len is not None:
                self._record(last_max_model_len=result.max_model_len)
            if key is not None and epoch == self._epoch and self._cache_size:
                self._cache[key] = result  # LRUCache: a hit refreshes, the least recently used entry goes
        return result

    def _fallback(self, kind: str, error: Exception, estimate: Callable[[], int],
                  margin_of: Callable[[int], int]) -> TokenCount:
        reason = f"{self._source}: {_describe(error)}"
        error_type = type(error).__name__
        try:
            estimated = int(estimate())
        except Exception as rough_exc:  # noqa: BLE001 - the estimate reads a backend's request: fail open, never raise
            LOGGER.warning("count unknown kind=%s source=%s backend_error=%s rough_error=%s; leaving requests unchanged",
                           kind, self._source, error_type, type(rough_exc).__name__)
            with self._lock:
                self._record(unknown=1, fallbacks=1, last_fallback_reason=reason)
            return TokenCount(tokens=None, exact=False, source=UNKNOWN_SOURCE, fallback_reason=reason)
        margin = margin_of(estimated)
        source = FALLBACK_SOURCE if margin else ROUGH_SOURCE
        rough_tokens = estimated + margin
        # While the circuit is open every count falls back; the breaker logged the failure once.
        LOGGER.log(logging.DEBUG if isinstance(error, CircuitOpen) else logging.WARNING,
                   "count fell back kind=%s backend=%s error=%s tokens=%d source=%s",
                   kind, self._source, error_type, rough_tokens, source)
        with self._lock:
            self._record(fallbacks=1, last_fallback_reason=reason)
        return TokenCount(tokens=rough_tokens, exact=False, source=source, fallback_reason=reason, margin_tokens=margin)

    def forget_counts(self) -> None:
        """Forget the cached whole-request and text counts, keeping the backend's own state (its piece cache,
        hf's rendered prompts): a benchmark repeating one compaction sees its counts as new, as a real one does."""
        with self._lock:
            self._epoch += 1
            self._cache.clear()

    def clear_cache(self) -> None:
        """Forget every cached count, the backend's too; a reply already in flight cannot refill the cache (epoch)."""
        self.forget_counts()
        self._housekeeping("clear_cache")

    def close(self) -> None:
        self._housekeeping("close")

    def _housekeeping(self, method: str) -> None:
        """Call a backend's ``clear_cache``/``close``; a failure is logged by type, never raised into the agent."""
        try:
            getattr(self._breaker, method)()
        except Exception as exc:  # noqa: BLE001 - backend code (third-party): housekeeping never raises into the agent
            LOGGER.warning("backend %s failed type=%s", method, type(exc).__name__)


def _describe(error: Exception) -> str:
    """The exception's type name; a ``CannotCount`` adds its message (safe by contract), nothing else does."""
    try:
        message = str(error) if isinstance(error, CannotCount) else ""
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the fallback
        message = ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _estimate_text(text: object) -> int:
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    return estimate_tokens_rough(text)
