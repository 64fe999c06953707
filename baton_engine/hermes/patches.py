"""Exact budgets where Hermes decides: estimator patches, the ``llm_request`` clamp, the auxiliary clamp.

Why patch names in modules: ``agent.turn_context`` and ``agent.conversation_loop`` import the rough
estimators BY NAME, so the only way to give ``should_compress`` exact numbers is to replace those names
there. Every patch keeps the original, is skipped with a warning when a name is missing in this Hermes
version, falls back to the original on any error, and is undone only if the module still holds our
wrapper (someone else's later patch is left alone).

One tokenizer round trip per request: every estimator and the middleware find the calling agent's
engine (``caller``) and count through its ledger one ``ProviderRequest`` view — the pre-API estimate
projects Hermes' stored messages the way its transport will send them and borrows the frame (tools,
template kwargs) of the agent's last request, so the middleware's count of the real request is the
same view, answered without a tokenizer call.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from baton_engine.agent.runtime import get_runtime
from baton_engine.hermes.caller import calling_agent, engine_of, engine_types
from baton_engine.hermes.guard import guarded, nothing
from baton_engine.tokens.verify import cached_prompt_tokens, usage_mapping

LOGGER = logging.getLogger("baton_engine.hermes")
_MISSING = object()
# the auxiliary request last built in this thread or task, as (engine, the ledger its reply verifies): Hermes builds
# each auxiliary call (``_build_call_kwargs``), sends it and validates its reply (``_validate_llm_response``) in one
# thread or task, so the next reply validated there answers it
_AUXILIARY_SENT: ContextVar[tuple[Any, Any] | None] = ContextVar("baton_auxiliary_sent", default=None)


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
    alternative: bool = False  # one of several places the same name lives in different Hermes versions
    group: str | None = None  # alternatives of one group: the first that installs is the only one installed
    optional: bool = False  # a name only some Hermes versions have; where it is absent there is nothing to replace

    def _skip(self, reason: str) -> bool:
        self.skipped = reason
        quiet = self.alternative or self.optional
        LOGGER.log(logging.DEBUG if quiet else logging.WARNING, "baton patch skipped: %s", reason)
        return False

    def install(self) -> bool:
        try:
            target = importlib.import_module(self.module)
        # importing a Hermes module runs Hermes' code: another version may fail in any way; skip the patch, say so
        # (the plugin still loads)
        except Exception as exc:  # noqa: BLE001
            return self._skip(f"module {self.module} not importable ({type(exc).__name__})")
        original = getattr(target, self.attr, _MISSING)
        if original is _MISSING or not callable(original):
            return self._skip(f"{self.module}.{self.attr} not found in this Hermes version")
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
        except ImportError:  # the module went away (it was imported at install): nothing to restore
            return False
        if getattr(target, self.attr, None) is not self.wrapper:
            LOGGER.warning("baton patch not restored: %s.%s was replaced by another plugin", self.module, self.attr)
            return False
        setattr(target, self.attr, self.original)
        return True


def _calling(session_id: Any = None) -> tuple[Any, Any | None]:
    """``(agent, engine)`` of the agent whose loop is calling (frames), else ``(None, the engine bound to
    session_id)``; the engine is None when neither finds one."""
    found = calling_agent(engine_types(), skip=2)
    return found if found is not None else (None, get_runtime().engines.lookup(session_id))


class ExactEstimators:
    """Exact stand-ins for Hermes' rough estimators: each call counts the calling agent's request view."""

    def __init__(self) -> None:
        self.calls = 0
        # whether this thread's last pre-API estimate was Hermes' own (Baton's count failed or had no engine):
        # then the tools estimate that follows it must be Hermes' own too, not the 0 of an exact count
        self.hermes_estimated = threading.local()

    @guarded("exact estimate", nothing, instead="Hermes' own estimate")
    def _count(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> int | None:
        """The calling agent's exact count of the request, None for Hermes' own estimate."""
        agent, engine = _calling()
        if engine is None:
            return None
        if not tools and agent is not None:
            tools = getattr(agent, "tools", None)  # the pre-API estimate counts the agent's tools too
        counted = engine.count_estimate(messages, system_prompt=system_prompt, tools=tools)
        self._scan_ahead(engine, messages)
        if counted.tokens is None:
            return None
        self.calls += 1
        return counted.tokens

    @guarded("scan ahead", nothing, instead="the compaction scans those messages itself")
    def _scan_ahead(self, engine: Any, messages: Any) -> None:
        """The messages this estimate added, scanned for the next compaction: guarded apart, so a failed scan
        never costs the exact count."""
        engine.prepare_compaction(messages)

    def request_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """Turn-start preflight: system prompt + messages + tools, as the transport will send them."""

        def estimate_request_tokens_exact(messages: Any, *args: Any, system_prompt: str = "",
                                          tools: Any = None, **kwargs: Any) -> int:
            counted = self._count(messages, system_prompt=system_prompt, tools=tools)
            if counted is not None:
                return counted
            return original(messages, *args, system_prompt=system_prompt, tools=tools, **kwargs)

        return estimate_request_tokens_exact

    def messages_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """Pre-API: the whole request (api messages + the agent's tools and template kwargs), exactly;
        the separate tools estimate that follows is then 0."""

        def estimate_messages_tokens_exact(messages: Any, *args: Any, **kwargs: Any) -> int:
            counted = self._count(messages)
            self.hermes_estimated.last = counted is None
            return counted if counted is not None else original(messages, *args, **kwargs)

        return estimate_messages_tokens_exact

    def whole_request_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """Hermes 0.22's pre-API estimate reads ``model_metadata.estimate_messages_tokens_rough`` at each call,
        as do its partial estimates (a context breakdown, an overflow's slices): only a whole request (it
        starts with the system prompt) is counted exactly, as the request the transport will send; any other
        list keeps Hermes' estimate (no tokenizer call for a fragment)."""
        exact = self.messages_tokens(original)

        def estimate_messages_tokens_exact(messages: Any, *args: Any, **kwargs: Any) -> int:
            whole = isinstance(messages, list) and bool(messages) and isinstance(messages[0], dict) \
                and messages[0].get("role") == "system"
            return exact(messages, *args, **kwargs) if whole else original(messages, *args, **kwargs)

        return estimate_messages_tokens_exact

    def tools_tokens(self, original: Callable[..., int]) -> Callable[..., int]:
        """0 for an agent whose exact message estimate already counted its tools; Hermes' estimate when the
        message estimate before it was Hermes' own."""

        def estimate_tools_tokens_exact(tools: Any, *args: Any, **kwargs: Any) -> int:
            own = getattr(self.hermes_estimated, "last", False)
            return 0 if not own and _tools_counted() else original(tools, *args, **kwargs)

        return estimate_tools_tokens_exact

    def no_rough_anchor(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Hermes 0.22's usage anchor (the last real prompt_tokens + a bytes/4 delta of the messages since)
        stands in for the estimate before every request; for a Baton agent it answers None ("no anchor"), so
        Hermes asks its estimator, i.e. Baton's exact count of the request (which anchors on real usage
        itself when the tokenizer is down)."""

        def anchored_context_tokens_exact(messages: Any, *args: Any, **kwargs: Any) -> Any:
            return None if _baton_is_calling() else original(messages, *args, **kwargs)

        return anchored_context_tokens_exact


@guarded("exact tools estimate", lambda: False, instead="Hermes' own estimate", default=False)
def _tools_counted() -> bool:
    """Whether the calling agent's exact message estimate already counted its tools."""
    agent, engine = _calling()
    return engine is not None and (agent is not None or engine.requests.ledger.frame is not None)


@guarded("anchor bypass", lambda: False, instead="Hermes' own anchor", default=False)
def _baton_is_calling() -> bool:
    return _calling()[1] is not None


_CURRENT: Activation | None = None


def activation() -> Activation | None:
    """The current activation (patches + middleware), if the plugin registered one (status reads it)."""
    return _CURRENT


def set_activation(current: Activation | None) -> Activation | None:
    """Make ``current`` the process's activation; returns the previous one (the caller deactivates it)."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, current
    return previous


class Activation:
    """The patches and middleware of one active Baton runtime; ``deactivate`` undoes them."""

    def __init__(self, extra: Sequence[Patch] = ()) -> None:
        """``extra``: further guarded patches activated with these (the refusal observer)."""
        self.estimators = ExactEstimators()
        e = self.estimators
        self.patches = [*extra,
            Patch("agent.turn_context", "estimate_request_tokens_rough", e.request_tokens),
            # the pre-API estimate: 0.19 imports the names into conversation_loop; 0.22 has no request
            # estimate there and imports estimate_messages_tokens_rough from model_metadata at each call
            Patch("agent.conversation_loop", "estimate_request_tokens_rough", e.request_tokens, optional=True),
            Patch("agent.conversation_loop", "estimate_messages_tokens_rough", e.messages_tokens, alternative=True,
                  group="pre-api estimate"),
            Patch("agent.model_metadata", "estimate_messages_tokens_rough", e.whole_request_tokens,
                  alternative=True, group="pre-api estimate"),
            Patch("agent.conversation_loop", "_estimate_tools_tokens_rough", e.tools_tokens),
            # 0.22 only: its usage anchor would replace the exact count (preflight and pre-API); imported by
            # name into two modules, at each call elsewhere
            Patch("agent.usage_anchor", "anchored_context_tokens", e.no_rough_anchor, optional=True),
            Patch("agent.turn_context", "anchored_context_tokens", e.no_rough_anchor, optional=True),
            Patch("agent.turn_request_assembly", "anchored_context_tokens", e.no_rough_anchor, optional=True),
            Patch("agent.auxiliary_client", "_build_call_kwargs", self._auxiliary),
            Patch("agent.auxiliary_client", "_validate_llm_response", self._auxiliary_reply),
            Patch("agent.conversation_compression", "check_compression_model_feasibility",
                  self._no_summariser_check, optional=True),
        ]
        self.active = False

    def activate(self) -> list[str]:
        """Install every patch that this Hermes version allows; returns the skipped ones (reasons)."""
        self.active = True
        groups: set[str] = set()
        for patch in self.patches:
            if patch.group in groups:
                patch.skipped = f"{patch.module}.{patch.attr}: its group ({patch.group}) is patched elsewhere"
                continue
            if patch.install() and patch.group:
                groups.add(patch.group)
        installed = {p.attr for p in self.patches if p.installed} | groups
        return [p.skipped for p in self.patches if p.skipped and not p.optional
                and not (p.alternative and (p.group or p.attr) in installed)]

    def deactivate(self) -> None:
        self.active = False
        for patch in reversed(self.patches):
            patch.restore()

    @guarded("llm_request middleware", nothing, instead="the request unchanged")
    def llm_request(self, request: Any = None, original_request: Any = None, model: Any = None,
                    base_url: Any = None, session_id: Any = None, provider: Any = None, api_mode: Any = None,
                    **_: Any) -> dict[str, Any] | None:
        """``llm_request`` middleware: the calling agent's engine budgets the request; fail-open, never raises."""
        if not self.active or not isinstance(request, dict):
            return None
        _agent, engine = _calling(session_id)
        if engine is None:
            return None
        rewritten = engine.on_request(request, api_mode=api_mode, model=model or request.get("model"),
                                      base_url=base_url, provider=provider)
        return None if rewritten is None else {"request": rewritten}

    def llm_execution(self, request: Any = None, next_call: Any = None, session_id: Any = None,
                      provider: Any = None, api_mode: Any = None, **_: Any) -> Any:
        """``llm_execution`` middleware: the provider call is Hermes' own (run unchanged; its errors are Hermes' and
        pass through), then the response's usage goes to the calling agent's route verification. This sees every
        main-loop response, streamed or not, also those Hermes never passes to ``update_from_response`` (0.19: cut at
        max_tokens, refused by a content filter), so a route whose replies are often cut still confirms."""
        response = next_call()
        if self.active:
            _observe_usage(response, session_id, provider, api_mode)
        return response

    def _auxiliary(self, original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        signature = _signature(original)

        def build_call_kwargs_clamped(*args: Any, **kwargs: Any) -> dict[str, Any]:
            _AUXILIARY_SENT.set(None)
            built = original(*args, **kwargs)
            if not self.active or not isinstance(built, dict):
                return built
            return _clamped(built, _argument(signature, args, kwargs, "base_url"))

        return build_call_kwargs_clamped

    def _auxiliary_reply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Hermes validates every auxiliary reply (sync and async, primary, retry and fallback) in
        ``_validate_llm_response``, its own accounting point for auxiliary usage: the reply's usage goes to the
        verification of the route its request was counted on (``_clamped``). Hermes' validation runs unchanged
        (its errors are Hermes' own)."""
        signature = _signature(original)

        def validate_llm_response_observed(response: Any, *args: Any, **kwargs: Any) -> Any:
            sent = _AUXILIARY_SENT.get()
            _AUXILIARY_SENT.set(None)  # one reply per request built
            validated = original(response, *args, **kwargs)
            if self.active and sent is not None:
                _observe_auxiliary(sent, validated, response,
                                   _argument(signature, (response, *args), kwargs, "provider"))
            return validated

        return validate_llm_response_observed

    def _no_summariser_check(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Hermes checks, before an agent's first compaction and after ``/model``, that its auxiliary summariser's
        window is at least its minimum (64,000 on 0.19) and raises out of ``run_conversation`` when it is not. Baton
        compacts without a summariser, so for a Baton agent the check is skipped: a ``/model`` to a 32,768 window
        otherwise ended the conversation at its first compaction (``test_model_switch_loop``)."""

        def check_compression_model_feasibility_unless_baton(agent: Any, *args: Any, **kwargs: Any) -> Any:
            if self.active and _baton_agent(agent):
                return None
            return original(agent, *args, **kwargs)

        return check_compression_model_feasibility_unless_baton


@guarded("response usage", nothing, instead="the usage left to update_from_response")
def _observe_usage(response: Any, session_id: Any, provider: Any, api_mode: Any) -> None:
    """The response's usage as Hermes normalises it (``normalize_usage``: one shape for chat, Anthropic and Responses
    replies), observed once for the request sent (``observe_response_usage``)."""
    raw = getattr(response, "usage", None)
    if not raw:
        return
    _agent, engine = _calling(session_id)
    if engine is None:
        return
    from agent.usage_pricing import normalize_usage  # Hermes' own, both 0.19 and 0.22

    canonical = normalize_usage(raw, provider=provider, api_mode=api_mode)
    usage = {"prompt_tokens": canonical.prompt_tokens, "completion_tokens": canonical.output_tokens}
    if cached_prompt_tokens(usage_mapping(raw)) is not None:  # the route reports its cache: Hermes' buckets say how much
        usage.update(cache_read_tokens=getattr(canonical, "cache_read_tokens", 0),
                     cache_write_tokens=getattr(canonical, "cache_write_tokens", 0))
    engine.observe_response_usage(usage)


@guarded("auxiliary clamp", lambda built, _base_url: built, instead="the auxiliary request unchanged")
def _clamped(built: dict[str, Any], base_url: Any) -> dict[str, Any]:
    """Hermes builds every auxiliary call (titles, vision, summaries) through ``_build_call_kwargs``: the calling
    agent's engine (its loop's frames, else the session Hermes publishes for the turn's auxiliary accounting: a
    tool's event loop or worker thread holds no agent frame) clamps the kwargs it built, and the request awaits its
    reply (``_observe_auxiliary``)."""
    _agent, engine = _calling(_accounting_session())
    if engine is None:
        return built
    call = engine.on_auxiliary(built, base_url=base_url)
    if call.ledger is not None:
        _AUXILIARY_SENT.set((engine, call.ledger))
    return built if call.request is None else call.request


@guarded("auxiliary reply usage", nothing, instead="the auxiliary reply left unobserved")
def _observe_auxiliary(sent: tuple[Any, Any], validated: Any, response: Any, provider: Any) -> None:
    """An auxiliary reply's usage as Hermes normalises it, observed in the ledger its request was counted in."""
    raw = getattr(validated, "usage", None) or getattr(response, "usage", None)
    if not raw:
        return
    from agent.usage_pricing import normalize_usage  # Hermes' own, both 0.19 and 0.22

    engine, ledger = sent
    canonical = normalize_usage(raw, provider=provider)
    engine.observe_auxiliary_usage(ledger, {"prompt_tokens": canonical.prompt_tokens,
                                            "completion_tokens": canonical.output_tokens})


def _accounting_session() -> Any:
    """The session whose turn is running, as Hermes publishes it for its auxiliary usage accounting
    (``agent.aux_accounting``: a context variable, so a tool's worker thread or event loop inherits it; Hermes sets it
    when the agent has its session database, as the CLI and gateway give it); None outside a turn, or on a Hermes
    without it. 0.19 reads it with ``get_accounting_context``; 0.22 has no reader, only the variable itself."""
    try:
        from agent import aux_accounting
    except ImportError:
        return None
    reader = getattr(aux_accounting, "get_accounting_context", None)
    variable = getattr(aux_accounting, "_accounting", None)
    context = reader() if callable(reader) else variable.get() if isinstance(variable, ContextVar) else None
    return context[1] if isinstance(context, tuple) and len(context) == 2 else None


@guarded("summariser check bypass", lambda _agent: False, instead="Hermes' own check", default=False)
def _baton_agent(agent: Any) -> bool:
    return engine_of(agent, engine_types()) is not None


def _signature(function: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _argument(signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    """One argument of a call, bound by the function's own signature (never by position guesses)."""
    if signature is None:
        return kwargs.get(name)
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return kwargs.get(name)
    return bound.arguments.get(name)
