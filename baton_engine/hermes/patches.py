"""Exact budgets where Hermes decides: estimator patches, the ``llm_request`` clamp, the auxiliary clamp.

Why patch names in modules: ``agent.turn_context`` and ``agent.conversation_loop`` import the rough
estimators BY NAME, so the only way to give ``should_compress`` exact numbers is to replace those names
there. Every patch keeps the original, is skipped with a warning when a name is missing in this Hermes
version, falls back to the original on any error, and is undone only if the module still holds our
wrapper (someone else's later patch is left alone).

One tokenizer round trip per request: the pre-API estimate counts ``{"messages", "tools"}`` exactly as
the middleware will see them, so the middleware's count is a cache hit in the shared counter.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton_engine.budget import clamp_output
from baton_engine.hermes.runtime import BatonRuntime, get_runtime

LOGGER = logging.getLogger("baton_engine.hermes")
_MISSING = object()


@dataclass
class Patch:
    """One guarded replacement of ``module.attr``."""

    module: str
    attr: str
    make: Callable[[Callable[..., Any]], Callable[..., Any]]
    original: Any = None
    wrapper: Any = None
    installed: bool = False
    skipped: str | None = None

    def install(self) -> bool:
        try:
            target = importlib.import_module(self.module)
        except Exception as exc:  # noqa: BLE001 - another Hermes version: skip, say so
            self.skipped = f"module {self.module} not importable ({type(exc).__name__})"
            LOGGER.warning("baton patch skipped: %s", self.skipped)
            return False
        original = getattr(target, self.attr, _MISSING)
        if original is _MISSING or not callable(original):
            self.skipped = f"{self.module}.{self.attr} not found in this Hermes version"
            LOGGER.warning("baton patch skipped: %s", self.skipped)
            return False
        self.original, self.wrapper = original, self.make(original)
        self.wrapper.__baton_original__ = original  # type: ignore[attr-defined]
        setattr(target, self.attr, self.wrapper)
        self.installed, self.skipped = True, None
        return True

    def restore(self) -> bool:
        """Put the original back only if our wrapper is still the one installed."""
        if not self.installed:
            return False
        self.installed = False
        try:
            target = importlib.import_module(self.module)
        except Exception:  # noqa: BLE001
            return False
        if getattr(target, self.attr, None) is not self.wrapper:
            LOGGER.warning("baton patch not restored: %s.%s was replaced by another plugin", self.module, self.attr)
            return False
        setattr(target, self.attr, self.original)
        return True


def _tools_key(tools: Sequence[Any] | None) -> str | None:
    if not tools:
        return None
    try:
        text = json.dumps(list(tools), sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return "unserialisable"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _PreApiState:
    """The tools of the main request and the last exact message count (for the split pre-API sum)."""

    tools: list[Any] | None = None
    tools_key: str | None = None
    messages: list[Any] | None = None
    counted: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class ExactEstimators:
    """Exact stand-ins for Hermes' rough estimators, bound to the process runtime."""

    def __init__(self, runtime_source: Callable[[], BatonRuntime] = get_runtime) -> None:
        self._runtime = runtime_source
        self._pre_api = _PreApiState()
        self.calls = 0

    def remember_tools(self, tools: Sequence[Any] | None) -> None:
        with self._pre_api.lock:
            self._pre_api.tools = list(tools) if tools else None
            self._pre_api.tools_key = _tools_key(tools)

    def request_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        def estimate_request_tokens_exact(messages: Any, *args: Any, system_prompt: str = "",
                                          tools: Any = None, **kwargs: Any) -> int:
            try:
                batch = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + list(messages)
                counted = self._runtime().count(batch, tools or None)
                if counted.tokens is not None:
                    self.calls += 1
                    return counted.tokens
            except Exception as exc:  # noqa: BLE001
                LOGGER.warning("baton exact estimate failed type=%s; using Hermes' estimate", type(exc).__name__)
            return original(messages, *args, system_prompt=system_prompt, tools=tools, **kwargs)

        return estimate_request_tokens_exact

    def messages_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """Pre-API: messages + the main request's tools, exactly (the tools share is then 0)."""

        def estimate_messages_tokens_exact(messages: Any, *args: Any, **kwargs: Any) -> int:
            try:
                state = self._pre_api
                with state.lock:
                    tools = state.tools
                counted = self._runtime().count(list(messages), tools)
                if counted.tokens is not None:
                    with state.lock:
                        state.messages, state.counted = list(messages), counted.tokens
                    self.calls += 1
                    return counted.tokens
            except Exception as exc:  # noqa: BLE001
                LOGGER.warning("baton exact estimate failed type=%s; using Hermes' estimate", type(exc).__name__)
            return original(messages, *args, **kwargs)

        return estimate_messages_tokens_exact

    def tools_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """0 when the preceding exact message count already included these tools; else the exact difference."""

        def estimate_tools_tokens_exact(tools: Any, *args: Any, **kwargs: Any) -> int:
            try:
                state = self._pre_api
                key = _tools_key(tools)
                with state.lock:
                    known_key, messages, counted = state.tools_key, state.messages, state.counted
                if messages is not None and counted is not None:
                    if key == known_key:
                        return 0
                    self.remember_tools(tools)
                    total = self._runtime().count(messages, tools or None)
                    if total.tokens is not None:
                        return max(total.tokens - counted, 0)
            except Exception as exc:  # noqa: BLE001
                LOGGER.warning("baton exact tools estimate failed type=%s", type(exc).__name__)
            return original(tools, *args, **kwargs)

        return estimate_tools_tokens_exact


def clamp_request(runtime: BatonRuntime, request: dict[str, Any], *, session_id: Any = None,
                  model: Any = None, base_url: Any = None) -> dict[str, Any] | None:
    """The clamped copy of a chat request, or None when it is left unchanged.

    Budgeted against the sending agent's window, capped by the server's own window: the count comes
    first because it is what tells Baton the server's ``max_model_len``.
    """
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    counted = runtime.count(messages, request.get("tools") or None)
    window = runtime.request_window(session_id=session_id, model=model or request.get("model"), base_url=base_url)
    settings = runtime.settings
    budget = clamp_output(request, counted, window=window.effective,
                          min_output_tokens=settings.min_output_tokens,
                          fallback_margin_tokens=settings.fallback_margin_tokens)
    runtime.last_clamp_reason = budget.reason
    if not budget.changed:
        runtime.clamp_skips += 1
        LOGGER.info("baton output budget unchanged prompt=%s source=%s", counted.tokens, counted.source)
        return None
    runtime.clamps += 1
    LOGGER.info("baton output budget field=%s value=%s prompt=%s window=%d window_source=%s source=%s",
                budget.field, budget.max_tokens, counted.tokens, window.effective, window.source, counted.source)
    return dict(budget.request)


class Activation:
    """The patches and middleware of one active Baton runtime; ``deactivate`` undoes them."""

    def __init__(self, runtime_source: Callable[[], BatonRuntime] = get_runtime) -> None:
        self._runtime = runtime_source
        self.estimators = ExactEstimators(runtime_source)
        e = self.estimators
        self.patches = [
            Patch("agent.turn_context", "estimate_request_tokens_rough", e.request_tokens),
            Patch("agent.conversation_loop", "estimate_request_tokens_rough", e.request_tokens),
            Patch("agent.conversation_loop", "estimate_messages_tokens_rough", e.messages_tokens),
            Patch("agent.conversation_loop", "_estimate_tools_tokens_rough", e.tools_tokens),
            Patch("agent.auxiliary_client", "_build_call_kwargs", self._auxiliary),
        ]
        self.active = False

    def activate(self) -> list[str]:
        """Install every patch that this Hermes version allows; returns the skipped ones (reasons)."""
        self.active = True
        for patch in self.patches:
            patch.install()
        return [p.skipped for p in self.patches if p.skipped]

    def deactivate(self) -> None:
        self.active = False
        for patch in reversed(self.patches):
            patch.restore()

    def llm_request(self, request: Any = None, original_request: Any = None, model: Any = None,
                    base_url: Any = None, session_id: Any = None, **_: Any) -> dict[str, Any] | None:
        """``llm_request`` middleware: clamp the main request's output budget; fail-open, never raises."""
        try:
            if not self.active or not isinstance(request, dict):
                return None
            runtime = self._runtime()
            if not runtime.route.matches(model or request.get("model"), base_url):
                return None
            self.estimators.remember_tools(request.get("tools") or None)
            clamped = clamp_request(runtime, request, session_id=session_id, model=model, base_url=base_url)
            return None if clamped is None else {"request": clamped}
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton llm_request middleware failed type=%s; request unchanged", type(exc).__name__)
            return None

    def _auxiliary(self, original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def build_call_kwargs_clamped(*args: Any, **kwargs: Any) -> dict[str, Any]:
            built = original(*args, **kwargs)
            try:
                if not self.active or not isinstance(built, dict):
                    return built
                runtime = self._runtime()
                base_url = kwargs.get("base_url") if "base_url" in kwargs else (args[9] if len(args) > 9 else None)
                if not runtime.route.matches(built.get("model"), base_url):
                    return built
                clamped = clamp_request(runtime, built, base_url=base_url)
                return built if clamped is None else clamped
            except Exception as exc:  # noqa: BLE001
                LOGGER.warning("baton auxiliary clamp failed type=%s; request unchanged", type(exc).__name__)
                return built

        return build_call_kwargs_clamped
