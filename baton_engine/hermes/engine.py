"""``BatonContextEngine``: Hermes' ContextEngine whose every compaction is a validated Baton handoff.

A thin adapter over one agent's Baton (``agent/agent.Agent``, its first base): each hook turns Hermes' call into
a core call and the core's answer back into Hermes' shape, and holds only what Hermes reads and writes by name
(its usage counters, the completed-compaction latch). Hermes makes one engine per agent from the registered one
(0.22: ``clone_for_agent``; 0.19: ``copy.deepcopy``) and silently falls back to its own compressor when that
fails, so the engine is plain data: the tokenizer client and locks live in the process runtime
(``docs/agents.md``). Every hook is ``guarded``: a fault answers what Hermes' built-in would (``hermes/guard.py``).
"""

from __future__ import annotations

import os
from typing import Any

from agent.context_engine import ContextEngine

from baton_engine.agent.agent import Agent
from baton_engine.agent.compactions import Compression
from baton_engine.agent.runtime import DEFAULT_CONTEXT_LENGTH
from baton_engine.agent.tools import INTERNAL_ERROR
from baton_engine.hermes.caller import register_engine_type
from baton_engine.hermes.config import ENGINE_NAME, installed_hermes_version
from baton_engine.hermes.guard import guarded, internal_errors, nothing
from baton_engine.hermes.host import HermesHost
from baton_engine.hermes.patches import activation
from baton_engine.tokens.verify import usage_value

# What a new agent's engine takes from the registered one (``clone_for_agent``): configuration the plugin or the
# host set before any agent existed. Everything else (ledger, memos, session, handoff, policy) starts fresh.
AGENT_CONFIGURATION = ("threshold_percent", "protect_first_n", "protect_last_n", "context_length",
                       "threshold_tokens", "route")


@register_engine_type
class BatonContextEngine(Agent, ContextEngine):
    """Exact-budget, handoff-based compaction for Hermes (``context.engine: baton``)."""

    def __init__(self, *, project_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__(HermesHost(), project_dir, threshold_percent=ContextEngine.threshold_percent,
                         adapter_version=f"hermes-{installed_hermes_version() or 'unknown'}")
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        # Hermes' completed-compaction latch (0.19+ read these by name): compress() says whether it rewrote the
        # list; the host then arms the latch (``record_completed_compaction``) and 0.22 re-arms its per-turn
        # compaction budget when the next response's prompt is below ``threshold_tokens`` (update_from_response
        # consumes it).
        self._last_compression_made_progress = False
        self._verify_compaction_cleared_threshold = False
        self._fit_window()

    @guarded("the engine's start", nothing, instead="the window as Hermes set it")
    def _fit_window(self) -> None:
        """Hermes 0.22 builds an agent's engine (``clone_for_agent``): a fault here must not lose the engine."""
        self.requests.fit_window()

    @property
    def name(self) -> str:
        return ENGINE_NAME

    def is_available(self) -> bool:
        return True

    def clone_for_agent(self) -> BatonContextEngine:
        """Hermes 0.22+: the engine of one more agent. It shares only the process runtime (settings, token counters,
        the registry) and takes this engine's configuration (``AGENT_CONFIGURATION``); its ledger, route history,
        memos and session state are its own. Hermes 0.19 deep-copies instead: as isolated (memos start empty, the
        session store is borrowed, never copied), only the copy also carries this engine's state."""
        clone = type(self)(project_dir=self.project.explicit)
        for name in AGENT_CONFIGURATION:
            setattr(clone, name, getattr(self, name))
        return clone

    @guarded("update_model", lambda self, model, context_length, *_, **__: self._builtin_window(context_length),
             instead="the window set as Hermes' built-in sets it")
    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "",
                     provider: str = "", api_mode: str = "", **_: Any) -> None:
        """``/model``, a fallback provider or start-up: the route and window this agent budgets."""
        self.requests.move_route(self.route.moved(model=model, base_url=base_url, provider=provider,
                                                  api_mode=api_mode, why="update_model"))
        self._apply_model_threshold(model, provider)
        self.requests.set_context_length(_window_or_default(context_length))

    def _builtin_window(self, context_length: Any) -> None:
        """What Hermes' ``ContextEngine.update_model`` does: the window, and the threshold as its percentage."""
        self.context_length = _window_or_default(context_length)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def _apply_model_threshold(self, model: Any, provider: Any) -> None:
        """Hermes 0.22 sets ``model_thresholds`` (config ``compression.model_thresholds``: model-name substring
        -> threshold percent) on the engine before ``update_model``: this model's entry, else the configured
        percent (remembered once, so a switch back does not keep the previous model's override), resolved by
        Hermes' own matcher. Without overrides (0.19) the percent is left as Hermes set it."""
        overrides = getattr(self, "model_thresholds", None)
        if not isinstance(overrides, dict) or not overrides:
            return
        if not hasattr(self, "_config_threshold_percent"):
            self._config_threshold_percent = self.threshold_percent
        try:
            from agent.context_compressor import resolve_model_threshold
        except ImportError:  # a Hermes without per-model thresholds: nothing to resolve
            return
        percent = float(resolve_model_threshold(str(model or ""), overrides, self._config_threshold_percent,
                                                str(provider or "")))
        if 0 < percent <= 1:
            self.threshold_percent = percent

    # ---- usage ------------------------------------------------------------------------------------

    @guarded("update_from_response", lambda self, usage, *_, **__: self._builtin_usage(usage),
             instead="Hermes' usage counters set as its built-in sets them")
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Real usage: Hermes' counters, and the exact size of the request just sent (the anchor). Consumes the
        completed-compaction latch (0.22 read it just before this call). It runs inside Hermes' API try: a fault
        here would read as a provider error, hence the guard."""
        self._verify_compaction_cleared_threshold = False
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.observe_response(usage)

    def _builtin_usage(self, usage: Any) -> None:
        """Hermes' built-in compressor's ``update_from_response``: its display counters from the usage as given."""
        self._verify_compaction_cleared_threshold = False
        if isinstance(usage, dict):
            self.last_prompt_tokens = _int(usage.get("prompt_tokens"))
            self.last_completion_tokens = _int(usage.get("completion_tokens"))
            self.last_total_tokens = _int(usage.get("total_tokens")) or \
                self.last_prompt_tokens + self.last_completion_tokens

    @guarded("on_turn_complete", nothing, instead="nothing observed (an observe-only hook)")
    def on_turn_complete(self, messages: Any = None, usage: Any = None, *, turn_id: Any = None, task_id: Any = None,
                         api_call_count: Any = None, interrupted: bool = False, failed: bool = False,
                         turn_exit_reason: Any = None, **_: Any) -> None:
        """Hermes 0.20+: the usage of the turn's last response, unless ``update_from_response`` already reported
        it. An interrupted or failed turn's usage may answer no request Baton counted: the anchor stays."""
        if isinstance(usage, dict) and not interrupted and not failed:
            self.observe_response_usage(usage)

    @guarded("select_context", nothing, instead="the request as Hermes built it")
    def select_context(self, request_messages: Any = None, *, conversation_messages: Any = None,
                       incoming_message: Any = None, budget_tokens: int = 0, **_: Any) -> list[Any] | None:
        """Hermes 0.20+ asks on EVERY provider request, BEFORE its sanitizers: a count here would be of another
        view than the one sent. So it only scans the new messages ahead and keeps the request; the request is
        counted once, as sent (``on_request``, which also shortens one that cannot fit)."""
        self.prepare_compaction(request_messages)
        return None

    # ---- when to compact ----------------------------------------------------------------------------

    @guarded("should_compress", lambda self, prompt_tokens=None, *_, **__: self._builtin_rule(prompt_tokens),
             instead="Hermes' built-in threshold rule", default=False)
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.should_compress_info(prompt_tokens)[0]

    @guarded("should_compress_info",
             lambda self, prompt_tokens=None, *_, **__: (self._builtin_rule(prompt_tokens), None),
             instead="Hermes' built-in threshold rule", default=(False, None))
    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(compact?, why a request at or above the trigger is held back)``: Hermes 0.22 warns the user with the
        reason after a "no", so a reason is given only for a block (the anti-thrash cooldown)."""
        decision = self.compaction_decision(self._asked_tokens(prompt_tokens), awaiting_usage=self._awaiting())
        return decision.compact, decision.reason if decision.held else None

    def _asked_tokens(self, prompt_tokens: Any) -> int:
        ok = isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool)
        return prompt_tokens if ok else self.last_prompt_tokens

    def _awaiting(self) -> bool:
        """Hermes' mark of a request sent whose usage has not come yet."""
        return self.last_prompt_tokens == -1

    def _builtin_rule(self, prompt_tokens: Any) -> bool:
        """Hermes' built-in compressor's rule on the numbers it gave: at or above ``threshold_tokens``."""
        threshold = self.threshold_tokens
        return threshold > 0 and self._asked_tokens(prompt_tokens) >= threshold

    @guarded("should_compress_preflight", lambda *_, **__: False, instead="no engine-driven preflight compaction",
             default=False)
    def should_compress_preflight(self, messages: Any = None) -> bool:
        """Hermes 0.22's sub-threshold maintenance, before its rough preflight: the exact count's decision."""
        return self.compacts_before_sending(messages, awaiting_usage=self._awaiting())

    @guarded("pending_compression_operation", nothing, instead="no operation announced")
    def pending_compression_operation(self, messages: Any = None, **_: Any) -> str | None:
        """"sanitize" when the next compress would only sanitise: Baton's never does (None)."""
        return None

    @guarded("prune_tool_results_only", lambda self, messages, *_, **__: (messages, 0),
             instead="the messages unchanged (no prune)", default=([], 0))
    def prune_tool_results_only(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                                **_: Any) -> tuple[list[dict[str, Any]], int]:
        """Hermes 0.22's preflight before a request that does not compress (``Pruner``)."""
        return self.pruner.prune(messages)

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """Never: while Baton is active the pre-flight number is an exact count, not a noisy estimate."""
        return False

    @guarded("has_content_to_compress", lambda *_, **__: True, instead="True (Hermes' ContextEngine default)",
             default=True)
    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        return self.compaction.has_content_to_compress(messages)

    @guarded("get_automatic_compaction_status_message", nothing, instead="no line")
    def get_automatic_compaction_status_message(self, *, phase: str, default_message: str = "",
                                                 **context: Any) -> str | None:
        """Hermes 0.22's line for an automatic compaction, asked at each phase: Baton's, at ``compress`` only
        (``compaction_line``), unless ``emit_automatic_compaction_status`` is off."""
        if not getattr(self, "emit_automatic_compaction_status", True) or phase != "compress":
            return None
        return self.compaction.starting_line(context.get("approx_tokens"))

    @guarded("get_active_compression_failure_cooldown", nothing, instead="no cooldown")
    def get_active_compression_failure_cooldown(self, **_: Any) -> dict[str, Any] | None:
        return self.compaction.failure_cooldown()

    # ---- the compaction ---------------------------------------------------------------------------

    @guarded("compress", lambda self, messages, current_tokens=None, *_, **__: self._compressed(
             self.compact_degraded(messages, current_tokens)), lambda self, messages, *_, **__: list(messages or []),
             instead="the recent messages, pair-safe (a degraded compaction)")
    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False, memory_context: str = "",
                 **_: Any) -> list[dict[str, Any]]:
        """One Baton handoff cycle; never raises, never returns an empty list."""
        self._last_compression_made_progress = False
        return self._compressed(self.compact(messages, current_tokens, focus_topic, force))

    def _compressed(self, done: Compression) -> list[dict[str, Any]]:
        self._last_compression_made_progress = done.progressed
        return done.messages

    def record_completed_compaction(self, **_: Any) -> None:
        """Hermes (0.19+) committed a compaction that made progress: arm the latch the next response's usage is
        judged by. Baton judges its own compactions by exact counts (``policy.after_compaction``)."""
        self._verify_compaction_cleared_threshold = True

    # ---- session lifecycle ------------------------------------------------------------------------

    @guarded("on_session_start", nothing, instead="the session's start not noted")
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        rotated = kwargs.get("boundary_reason") == "compression"
        if not rotated:
            self._verify_compaction_cleared_threshold = False
        self.session_started(session_id, model=kwargs.get("model"), rotated=rotated,
                             platform=kwargs.get("platform"), conversation_id=kwargs.get("conversation_id"))

    @guarded("on_session_reset", lambda self: self._builtin_usage({}),
             instead="Hermes' usage counters reset as its built-in resets them")
    def on_session_reset(self) -> None:
        self._builtin_usage({})
        self.session_reset()

    @guarded("on_session_end", nothing, instead="no draft checkpoint")
    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Draft checkpoint when the detector recommends and ``auto_checkpoint_on_end`` is set; never ready."""
        self.compaction.ended(messages, self.last_prompt_tokens)

    @guarded("bind_session_state", nothing, instead="recall keeps its previous source")
    def bind_session_state(self, session_db: Any = None, session_id: str | None = None, **_: Any) -> None:
        self.session_bound(session_db, session_id)

    # ---- tools and status -------------------------------------------------------------------------

    @guarded("get_tool_schemas", lambda *_, **__: [], instead="no tools", default=[])
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return self.tool_handler.schemas()

    @guarded("handle_tool_call", lambda *_, **__: INTERNAL_ERROR, instead="the tool answers internal_error (JSON)")
    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return self.tool_handler.handle(name, args, kwargs.get("messages"))

    @guarded("get_status", lambda self: self._minimal_status(), instead="a minimal status saying so",
             default={"engine": ENGINE_NAME, "status_error": "internal_error"})
    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "engine": ENGINE_NAME, "active": True, "exact_estimators": _estimators(),
                **self.status(), "internal_errors": internal_errors()}

    def _minimal_status(self) -> dict[str, Any]:
        """Hermes' base status (its display numbers) and that Baton's own could not be read."""
        return {**super().get_status(), "engine": ENGINE_NAME, "status_error": "internal_error",
                "internal_errors": internal_errors()}


def _estimators() -> dict[str, list[Any]]:
    """Which of Hermes' estimators the plugin's activation replaced with exact counts, and which it skipped (why)."""
    current = activation()
    patches = current.patches if current is not None else []
    return {"installed": [f"{p.module}.{p.attr}" for p in patches if p.installed],
            "skipped": [p.skipped for p in patches if p.skipped]}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _window_or_default(context_length: Any) -> int:
    return context_length if _int(context_length) > 0 else DEFAULT_CONTEXT_LENGTH

