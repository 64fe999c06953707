"""The process-wide Baton runtime inside Hermes: settings, the route guard and ONE shared token counter.

Why module state and not engine attributes: Hermes deep-copies the registered engine for every agent,
and a live tokenizer client or lock must not be copied (a copy failure silently falls back to the
built-in compressor). Engines, patches and the middleware all reach the same counter here, so the
pre-API estimate and the request middleware share one cache: one tokenizer round trip per request.

Windows are per agent: each engine records its own window here (by session id and by route) when
Hermes tells it the model, so the middleware budgets every request against ITS agent's window and
building another engine never changes anyone else's.

Time comes from ONE injectable clock (``clock``, default real UTC time): a compaction reads it once,
so a test or benchmark that pins it gets the same record ids and timestamps for the same input.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from baton_engine.budget import compression_window
from baton_engine.hermes.config import HermesView
from baton_engine.settings import BatonSettings
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend

LOGGER = logging.getLogger("baton_engine.hermes")
DEFAULT_CONTEXT_LENGTH = 131072
DEFAULT_THRESHOLD_PERCENT = 0.75


@dataclass(frozen=True)
class Route:
    """The main model route the output clamp applies to (anything else is left untouched)."""

    model: str | None = None
    base_url: str | None = None

    def matches(self, model: Any, base_url: Any) -> bool:
        if self.model and model and str(model) != self.model:
            return False
        if self.base_url and base_url and str(base_url).rstrip("/") != self.base_url:
            return False
        return True


def _route_key(model: Any, base_url: Any) -> tuple[str, str, str]:
    return ("route", str(model or ""), str(base_url or "").rstrip("/"))


class WindowRegistry:
    """Each agent's context window, by session id and by (model, base_url); bounded LRU, thread-safe."""

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._windows: OrderedDict[tuple[str, ...], int] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, window: int, *, session_id: Any = None, route: tuple[Any, Any] | None = None) -> None:
        """Record ``window`` for a session id and/or a (model, base_url) route."""
        keys = ([_route_key(*route)] if route is not None else []) + (
            [("session", str(session_id))] if session_id else [])
        with self._lock:
            for key in keys:
                self._windows[key] = window
                self._windows.move_to_end(key)
            while len(self._windows) > self._capacity:
                self._windows.popitem(last=False)

    def lookup(self, *, session_id: Any = None, model: Any = None, base_url: Any = None) -> int | None:
        """The window of the agent behind a request: its session first, then its route."""
        keys = ([("session", str(session_id))] if session_id else []) + [_route_key(model, base_url)]
        with self._lock:
            for key in keys:
                if key in self._windows:
                    return self._windows[key]
        return None


@dataclass(frozen=True)
class Window:
    """The window a budget uses and where it came from (numbers only: safe for status and logs)."""

    hermes: int
    server: int | None = None

    @property
    def effective(self) -> int:
        return min(self.hermes, self.server) if self.server is not None else self.hermes

    @property
    def source(self) -> str:
        return "server max_model_len" if self.effective != self.hermes else "hermes context_length"

    def to_status(self) -> dict[str, Any]:
        mismatch = (f"server max_model_len {self.server} < Hermes context_length {self.hermes}; "
                    f"budgeting against {self.effective}") if self.effective != self.hermes else None
        return {"hermes_context_length": self.hermes, "server_max_model_len": self.server,
                "effective": self.effective, "source": self.source, "mismatch": mismatch}


def _utc_clock() -> datetime:
    return datetime.now(UTC)


def count_request(messages: Sequence[Any], tools: Sequence[Any] | None = None) -> dict[str, Any]:
    """The canonical request Baton counts: same shape everywhere, so the cache key matches."""
    request: dict[str, Any] = {"messages": list(messages)}
    if tools:
        request["tools"] = list(tools)
    return request


class BatonRuntime:
    """Settings + host view + a lazily built, thread-safe counter (never built at import or copy time)."""

    def __init__(self, settings: BatonSettings, view: HermesView | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.settings = settings
        self.clock: Callable[[], datetime] = clock or _utc_clock
        self.view = view or HermesView()
        self.route = Route(self.view.model, self.view.base_url)
        self.context_length = self.view.context_length or DEFAULT_CONTEXT_LENGTH
        self.threshold_percent = DEFAULT_THRESHOLD_PERCENT
        self.windows = WindowRegistry()
        self.last_chat_exact: bool | None = None
        self._counter: TokenCounter | None = None
        self._counter_error: str | None = None
        self._lock = threading.Lock()
        self.clamps = 0
        self.clamp_skips = 0
        self.last_clamp_reason: str | None = None

    def now(self) -> datetime:
        """The clock's time as aware UTC; a naive clock is refused (it would silently mean local time)."""
        moment = self.clock()
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise TypeError("BatonRuntime.clock must return an aware datetime (UTC)")
        return moment.astimezone(UTC)

    # ---- counting --------------------------------------------------------------------------------

    def counter(self) -> TokenCounter | None:
        """The shared counter, built on first use; None (and a status reason) when the backend cannot start."""
        with self._lock:
            if self._counter is None and self._counter_error is None:
                config = replace(self.settings.tokenizer, context_length=self.context_length)
                try:
                    backend, selection = build_backend(config)
                except Exception as exc:  # noqa: BLE001 - reported in status; counting falls back to rough
                    self._counter_error = f"tokenizer backend unavailable: {type(exc).__name__}"
                    LOGGER.warning("baton tokenizer backend could not start type=%s", type(exc).__name__)
                    return None
                self._counter = TokenCounter(backend, fallback_margin_tokens=self.settings.fallback_margin_tokens)
                LOGGER.info("baton tokenizer selected name=%s source=%s", selection.name, self._counter.source)
            return self._counter

    @property
    def counter_error(self) -> str | None:
        return self._counter_error

    def count(self, messages: Sequence[Any], tools: Sequence[Any] | None = None) -> TokenCount:
        """Exact provider-visible tokens of messages + tools, or rough + margin; never raises."""
        counter = self.counter()
        if counter is None:
            from baton_engine.tokens.counter import FALLBACK_SOURCE
            from baton_engine.tokens.rough import estimate_chat_request

            try:
                tokens = estimate_chat_request(count_request(messages, tools)) + self.settings.fallback_margin_tokens
            except Exception:  # noqa: BLE001
                return TokenCount(None, False, "unknown", fallback_reason=self._counter_error)
            self.last_chat_exact = False
            return TokenCount(tokens, False, FALLBACK_SOURCE, fallback_reason=self._counter_error)
        counted = counter.count_chat(count_request(messages, tools))
        self.last_chat_exact = counted.exact
        return counted

    def count_text(self, text: str) -> TokenCount:
        counter = self.counter()
        if counter is None:
            from baton_engine.tokens.rough import estimate_tokens_rough

            return TokenCount(estimate_tokens_rough(text), False, "rough", fallback_reason=self._counter_error)
        return counter.count_text(text)

    def source(self) -> str:
        counter = self.counter()
        return counter.source if counter is not None else "rough (backend unavailable)"

    # ---- budgets ---------------------------------------------------------------------------------

    def server_window(self) -> int | None:
        """The serving model's own window, from a backend that asks the server (vLLM's ``max_model_len``,
        incl. its ``max_model_len_mismatch``); None for local tokenizers. No I/O: known after one count."""
        with self._lock:
            counter = self._counter
        if counter is None or not hasattr(counter.backend, "max_model_len_mismatch"):
            return None
        mismatch = counter.backend.max_model_len_mismatch
        server = mismatch.server if mismatch is not None else counter.stats().last_max_model_len
        return server if isinstance(server, int) and not isinstance(server, bool) and server > 0 else None

    def window(self, hermes_window: int) -> Window:
        """``hermes_window`` (the agent's context_length) against what the server will enforce."""
        return Window(hermes_window, self.server_window())

    def request_window(self, *, session_id: Any = None, model: Any = None, base_url: Any = None) -> Window:
        """The window of the agent that sent a request (else the configured one), capped by the server."""
        known = self.windows.lookup(session_id=session_id, model=model, base_url=base_url)
        return self.window(known if known is not None else self.context_length)

    def reserved_output_tokens(self) -> int:
        """Output kept free below the compaction threshold: the clamp guarantees the rest (see patches)."""
        return self.settings.min_output_tokens + self.settings.fallback_margin_tokens

    def threshold_for(self, context_length: int, threshold_percent: float) -> int:
        return compression_window(
            context_length,
            threshold_percent,
            reserved_output_tokens=min(self.reserved_output_tokens(), context_length // 2),
            override=self.settings.compression_window_tokens,
        )

    def close(self) -> None:
        with self._lock:
            counter, self._counter = self._counter, None
        if counter is not None:
            counter.close()


_ACTIVE: BatonRuntime | None = None
_ACTIVE_LOCK = threading.Lock()


def set_runtime(runtime: BatonRuntime | None) -> BatonRuntime | None:
    """Install ``runtime`` as the process runtime; returns the previous one (closed by the caller)."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        previous, _ACTIVE = _ACTIVE, runtime
    return previous


def clock_now() -> datetime:
    """The installed runtime's clock, else real UTC time (never builds a runtime or reads settings)."""
    with _ACTIVE_LOCK:
        active = _ACTIVE
    return active.now() if active is not None else _utc_clock()


def get_runtime() -> BatonRuntime:
    """The installed runtime, or one from the environment alone (an engine used outside the plugin)."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        if _ACTIVE is None:
            from baton_engine.settings import load_settings

            _ACTIVE = BatonRuntime(load_settings())
        return _ACTIVE


def usage_value(usage: Mapping[str, Any], *keys: str) -> int:
    """The first non-negative int among ``keys`` (Hermes' usage dicts vary by version)."""
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0
