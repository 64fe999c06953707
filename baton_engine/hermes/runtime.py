"""The process-wide Baton runtime inside Hermes: settings, the route guard and ONE shared token counter.

Why module state and not engine attributes: Hermes deep-copies the registered engine for every agent,
and a live tokenizer client or lock must not be copied (a copy failure silently falls back to the
built-in compressor). Engines, patches and the middleware all reach the same counter here, so the
pre-API estimate and the request middleware share one cache: one tokenizer round trip per request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
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


def count_request(messages: Sequence[Any], tools: Sequence[Any] | None = None) -> dict[str, Any]:
    """The canonical request Baton counts: same shape everywhere, so the cache key matches."""
    request: dict[str, Any] = {"messages": list(messages)}
    if tools:
        request["tools"] = list(tools)
    return request


class BatonRuntime:
    """Settings + host view + a lazily built, thread-safe counter (never built at import or copy time)."""

    def __init__(self, settings: BatonSettings, view: HermesView | None = None) -> None:
        self.settings = settings
        self.view = view or HermesView()
        self.route = Route(self.view.model, self.view.base_url)
        self.context_length = self.view.context_length or DEFAULT_CONTEXT_LENGTH
        self.threshold_percent = DEFAULT_THRESHOLD_PERCENT
        self._counter: TokenCounter | None = None
        self._counter_error: str | None = None
        self._lock = threading.Lock()
        self.clamps = 0
        self.clamp_skips = 0
        self.last_clamp_reason: str | None = None

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
            return TokenCount(tokens, False, FALLBACK_SOURCE, fallback_reason=self._counter_error)
        return counter.count_chat(count_request(messages, tools))

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
