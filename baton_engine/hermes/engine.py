"""``BatonContextEngine``: Hermes' ContextEngine whose every compaction is a validated Baton handoff.

A thin adapter: it turns Hermes' calls into calls on its collaborators (the request budgeter, the compaction
runner, the tool handler, status) and their answers back into Hermes' shapes.

Why it holds only plain data: Hermes makes one engine per agent from the registered one (0.22:
``clone_for_agent``; 0.19: ``copy.deepcopy``) and silently falls back to its own compressor when that fails, so
the tokenizer client and locks live in ``runtime`` (process-wide) and each agent's engine keeps this agent's ids,
window, route, request ledger and memos (``docs/agents.md``). Agents never share per-request state. The state
survives Hermes' session-id rotation at compaction. Nothing here raises into the agent loop: decisions fall
back to "do not compress", ``compress()`` to a degraded, pair-safe list, request budgets to "leave the request
alone".
"""

from __future__ import annotations

import os
from typing import Any

from agent.context_engine import ContextEngine

from baton_engine import policy, results
from baton_engine.agent import status
from baton_engine.agent.compactions import CompactionRunner
from baton_engine.agent.ledger import Ledger, Route
from baton_engine.agent.project import Project
from baton_engine.agent.pruner import Pruner
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import AgentWindow, AuxiliaryCall, RequestBudgeter, ScanAhead
from baton_engine.agent.runtime import DEFAULT_CONTEXT_LENGTH, RouteCounting, get_runtime
from baton_engine.agent.tool_handler import ToolHandler
from baton_engine.hermes.caller import register_engine_type
from baton_engine.hermes.config import ENGINE_NAME, installed_hermes_version
from baton_engine.hermes.guard import guarded, internal_errors, nothing
from baton_engine.hermes.host import HermesHost
from baton_engine.hermes.patches import activation
from baton_engine.refusal import Refusal
from baton_engine.request import ProviderRequest
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import cached_prompt_tokens, reported_prompt_tokens, usage_value

# What a new agent's engine takes from the registered one (``clone_for_agent``): configuration the plugin or the
# host set before any agent existed. Everything else (ledger, memos, session, handoff, policy) starts fresh.
AGENT_CONFIGURATION = ("threshold_percent", "protect_first_n", "protect_last_n", "context_length",
                       "threshold_tokens", "route")


def hermes_version() -> str:
    return installed_hermes_version() or "unknown"


@register_engine_type
class BatonContextEngine(ContextEngine):
    """Exact-budget, handoff-based compaction for Hermes (``context.engine: baton``).

    Composed of explicit collaborators, each built from what it needs: ``project`` (which project, its
    settings), ``window`` (Hermes' context length and threshold, read and set by name through the properties
    below), ``requests`` (the request budgeter: route, ledger, memos, counting, ``budget.decide`` on each
    request), ``scan_ahead`` (the messages already scanned for the next compaction), ``recall_binding`` (where
    ``baton_recall`` reads), ``compaction`` (the compaction runner: when to compact, the cycle, the session's
    lineage and draft) and ``tool_handler`` (the tools' host). Hermes' hooks stay here and delegate; the engine
    itself holds only what Hermes reads and writes by name (usage counters, the completed-compaction latch)."""

    def __init__(self, *, project_dir: str | os.PathLike[str] | None = None) -> None:
        host = HermesHost()  # what the core asks of Hermes (agent/host.Host): stateless, shared by the copies
        self.project = Project(host, project_dir)
        self.window = AgentWindow(ContextEngine.threshold_percent)
        self.scan_ahead = ScanAhead()
        self.requests = RequestBudgeter(host, self.window, self.project, self.scan_ahead)
        self.recall_binding = RecallBinding(self.requests)
        self.compaction = CompactionRunner(self.requests, self.recall_binding, self.project, self.scan_ahead,
                                           adapter_version=f"hermes-{hermes_version()}")
        self.tool_handler = ToolHandler(self.compaction, self.requests, self.recall_binding)
        self.pruner = Pruner(self.requests, self.compaction, self.recall_binding)
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

    # ---- what Hermes and the tools read and set by name, held by the collaborators ----------------------

    @property
    def context_length(self) -> int:  # type: ignore[override]
        return self.window.context_length

    @context_length.setter
    def context_length(self, value: int) -> None:
        self.window.context_length = value

    @property
    def threshold_tokens(self) -> int:  # type: ignore[override]
        return self.window.threshold_tokens

    @threshold_tokens.setter
    def threshold_tokens(self, value: int) -> None:
        self.window.threshold_tokens = value

    @property
    def compression_count(self) -> int:  # type: ignore[override]
        return self.compaction.compression_count

    @compression_count.setter
    def compression_count(self, value: int) -> None:
        self.compaction.compression_count = value

    @property
    def threshold_percent(self) -> float:  # type: ignore[override]
        return self.window.threshold_percent

    @threshold_percent.setter
    def threshold_percent(self, value: float) -> None:
        self.window.threshold_percent = value

    @property
    def route(self) -> Route:
        return self.requests.route

    @route.setter
    def route(self, value: Route) -> None:
        self.requests.route = value

    # ---- identity and host attributes -------------------------------------------------------------

    @property
    def name(self) -> str:
        return ENGINE_NAME

    def is_available(self) -> bool:
        return True

    def clone_for_agent(self) -> BatonContextEngine:
        """Hermes 0.22+: the engine of one more agent (the host holds the registered engine and asks each agent's
        own). It shares only the process runtime (``get_runtime()``: settings, token counters, the registry) and
        takes this engine's configuration (``AGENT_CONFIGURATION``); its ledger, route history, memos and session
        state are its own. Hermes 0.19 deep-copies instead: the copy is as isolated (its memos start empty, the
        session store is borrowed, never copied), only it also carries whatever state this engine had."""
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

    # ---- the request side (``requests``) ---------------------------------------------------------

    def counting(self) -> RouteCounting:
        return self.requests.counting()

    def limits(self, tokens: int | None = None) -> policy.Limits:
        return self.requests.limits(tokens)

    def count(self, view: ProviderRequest) -> TokenCount:
        return self.requests.count(view)

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        return self.requests.count_estimate(messages, system_prompt=system_prompt, tools=tools)

    def on_request(self, request: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
        return self.requests.on_request(request, **kwargs)

    def on_auxiliary(self, request: dict[str, Any], *, base_url: Any = None) -> AuxiliaryCall:
        return self.requests.on_auxiliary(request, base_url=base_url)

    def observe_auxiliary_usage(self, ledger: Ledger, usage: dict[str, Any]) -> None:
        """An auxiliary reply's usage, for the request ``on_auxiliary`` counted in ``ledger`` (its route's)."""
        self.requests.observe_auxiliary(ledger, reported_prompt_tokens(usage))

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        return self.requests.aux_matches_route(model, base_url)

    def observe_refusal(self, refusal: Refusal) -> None:
        self.requests.observe_refusal(refusal)

    @guarded("update_from_response", lambda self, usage, *_, **__: self._builtin_usage(usage),
             instead="Hermes' usage counters set as its built-in sets them")
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Real usage: Hermes' counters, and the exact size of the request just sent (the anchor). Consumes
        the completed-compaction latch: Hermes 0.22 read it just before this call, and it answers only the
        first response after the compaction. It runs inside Hermes' API try: a fault here would read as a
        provider error, hence the guard."""
        self._verify_compaction_cleared_threshold = False
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.compaction.turns += 1
        self.observe_response_usage(usage)

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
        """Hermes 0.20+: the usage of the turn's last response, which answers the last request sent. It feeds
        the anchor and the route's verification when ``update_from_response`` did not already report that
        request's size (0.22 reports both; a host path that skips update_from_response does not). An interrupted
        or failed turn's usage may answer no request Baton counted (a retry, a cut stream): the anchor stays."""
        if isinstance(usage, dict) and not interrupted and not failed:
            self.observe_response_usage(usage)

    def observe_response_usage(self, usage: dict[str, Any]) -> None:
        """The provider's usage of the last request sent, from whichever host path delivers it first: the
        ``llm_execution`` middleware (every main-loop response, also those Hermes never passes to
        ``update_from_response``: cut at max_tokens, refused), ``update_from_response``, ``on_turn_complete``.
        Observed once per request, so a response that reaches several of them is counted once."""
        if not self.requests.ledger.usage_observed():
            self.requests.observe_reported(
                reported_prompt_tokens(usage), usage_value(usage, "completion_tokens", "output_tokens"),
                cached=cached_prompt_tokens(usage),
                written=usage_value(usage, "cache_creation_input_tokens", "cache_write_tokens"))

    @guarded("select_context", nothing, instead="the request as Hermes built it")

    def select_context(self, request_messages: Any = None, *, conversation_messages: Any = None,
                       incoming_message: Any = None, budget_tokens: int = 0, **_: Any) -> list[Any] | None:
        """Hermes 0.20+ asks on EVERY provider request (retries too), BEFORE its sanitizers strip and
        canonicalise the messages: a count here is of another view than the one sent, a second tokenizer
        round trip per request. So it only scans the new messages ahead for the next compaction and returns
        None (the request as it is). The request is counted once, as sent: the pre-API estimate and the
        middleware share that count, a retry is a memo hit, and a request whose prompt alone cannot fit is
        shortened there (``on_request`` -> ``request_only_compaction``)."""
        self.prepare_compaction(request_messages)
        return None

    # ---- when to compact (``compaction``) -----------------------------------------------------------

    @guarded("should_compress", lambda self, prompt_tokens=None, *_, **__: self._builtin_rule(prompt_tokens),
             instead="Hermes' built-in threshold rule", default=False)
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.should_compress_info(prompt_tokens)[0]

    @guarded("should_compress_info",
             lambda self, prompt_tokens=None, *_, **__: (self._builtin_rule(prompt_tokens), None),
             instead="Hermes' built-in threshold rule", default=(False, None))
    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(compact?, why a request at or above the trigger is held back)``: Hermes 0.22 asks after a "no" and
        warns the user with the reason ("over the threshold but compression is blocked"), so a reason is given
        only for a block (the anti-thrash cooldown), None below the trigger. The reason of every decision is
        ``last_decision`` (status)."""
        decision = self.compaction.decide(self._asked_tokens(prompt_tokens),
                                          awaiting_usage=self.last_prompt_tokens == -1)
        self.compaction.last_decision = decision.reason
        return decision.compact, decision.reason if decision.held else None

    def _asked_tokens(self, prompt_tokens: Any) -> int:
        ok = isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool)
        return prompt_tokens if ok else self.last_prompt_tokens

    def _builtin_rule(self, prompt_tokens: Any) -> bool:
        """Hermes' built-in compressor's rule on the numbers it gave: at or above ``threshold_tokens``."""
        threshold = self.threshold_tokens
        return threshold > 0 and self._asked_tokens(prompt_tokens) >= threshold

    @guarded("should_compress_preflight", lambda *_, **__: False, instead="no engine-driven preflight compaction",
             default=False)
    def should_compress_preflight(self, messages: Any = None) -> bool:
        """Hermes 0.22's sub-threshold maintenance asks before its rough preflight: answered from the exact count of
        the request these messages make, by the same decision as ``should_compress`` (so what fits is never
        compacted; a count already made for the request is reused)."""
        if not isinstance(messages, list) or not messages:
            return False
        counted = self.requests.count(self.requests.view_of(messages))
        if counted.tokens is None:
            return False
        return self.compaction.decide(counted.tokens, awaiting_usage=self.last_prompt_tokens == -1).compact

    @guarded("pending_compression_operation", nothing, instead="no operation announced")
    def pending_compression_operation(self, messages: Any = None, **_: Any) -> str | None:
        """Upstream's newer hook: "sanitize" when the next compress would only sanitise. Baton's never does: each
        compaction writes a handoff (or, degraded, drops turns), so the honest answer is None."""
        return None

    @guarded("prune_tool_results_only", lambda self, messages, *_, **__: (messages, 0),
             instead="the messages unchanged (no prune)", default=([], 0))
    def prune_tool_results_only(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                                **_: Any) -> tuple[list[dict[str, Any]], int]:
        """Hermes 0.22's preflight before a request that does not compress: answered tool output reclaimed
        (``Pruner``; the decision is core's). A NEW list and the number of messages pruned, or the input and 0."""
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
        """Hermes 0.22 prints this line for an automatic compaction instead of its own ("Compacting context —
        summarizing earlier conversation...", false for Baton). It asks before ``compress()`` at each phase
        (``preflight``/``pre_api``/``idle`` announce, ``compress`` starts): Baton says one line, at ``compress``
        (``compaction_line``); None elsewhere and when ``emit_automatic_compaction_status`` is off."""
        if not getattr(self, "emit_automatic_compaction_status", True) or phase != "compress":
            return None
        return self.compaction.starting_line(context.get("approx_tokens"))

    @guarded("get_active_compression_failure_cooldown", nothing, instead="no cooldown")
    def get_active_compression_failure_cooldown(self, **_: Any) -> dict[str, Any] | None:
        return self.compaction.failure_cooldown()

    # ---- the cycle -------------------------------------------------------------------------------

    def prepare_compaction(self, messages: Any) -> None:
        """Scan the messages this request added ahead for the next compaction (``ScanAhead``); never raises."""
        self.scan_ahead.observe(messages)

    @guarded("compress", lambda self, messages, *_, **__: list(messages or []),
             instead="the messages unchanged (no progress)")
    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False, memory_context: str = "",
                 **_: Any) -> list[dict[str, Any]]:
        """One Baton handoff cycle (``CompactionRunner.compress``); never raises (a failure starts the failure
        cooldown and answers the messages unchanged), never returns an empty list."""
        self._last_compression_made_progress = False
        try:
            done = self.compaction.compress(messages, current_tokens, focus_topic, force)
        except Exception as exc:
            self.compaction.failed(type(exc).__name__)
            raise
        self._last_compression_made_progress = done.progressed
        return done.messages

    def record_completed_compaction(self, **_: Any) -> None:
        """Hermes (0.19+): a compaction that made progress was committed; arm the latch the next response's
        usage is judged by (0.22 re-arms its per-turn compaction budget on it). Baton judges its own
        compactions by exact counts (``policy.after_compaction``): the host's fallback and feasibility flags
        change nothing here."""
        self._verify_compaction_cleared_threshold = True

    # ---- session lifecycle -----------------------------------------------------------------------

    @guarded("on_session_start", nothing, instead="the session's start not noted")
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A rotation at compaction keeps every bit of state; any other start (a new agent, ``/new``,
        ``/resume``) is a session of its own: it takes its owner from the host and continues only its own
        lineage (``CompactionRunner.start``)."""
        if kwargs.get("model"):
            self.requests.move_route(self.route.moved(model=str(kwargs["model"]), why="session start"))
        if kwargs.get("boundary_reason") == "compression":
            self.compaction.rotated(session_id)
        else:
            self._verify_compaction_cleared_threshold = False
            self.pruner.new_session()
            self.compaction.start(session_id, platform=kwargs.get("platform"),
                                  conversation_id=kwargs.get("conversation_id"))
        get_runtime().engines.remember(self.compaction.session_id, self)

    @guarded("on_session_reset", lambda self: self._builtin_usage({}),
             instead="Hermes' usage counters reset as its built-in resets them")
    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: per-session detector state and token counters; the handoff lineage stays
        until the next session start says whose session follows."""
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self._verify_compaction_cleared_threshold = False
        self.pruner.new_session()
        self.compaction.reset()

    @guarded("on_session_end", nothing, instead="no draft checkpoint")
    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Draft checkpoint when the detector recommends and ``auto_checkpoint_on_end`` is set; never ready."""
        self.compaction.ended(messages, self.last_prompt_tokens)

    @guarded("bind_session_state", nothing, instead="recall keeps its previous source")
    def bind_session_state(self, session_db: Any = None, session_id: str | None = None, **_: Any) -> None:
        """Hermes hands its session store (or None) and the session id; recall then reads that store."""
        self.recall_binding.bind(session_db)
        if session_id:
            self.compaction.session_id = session_id

    # ---- tools (``tool_handler``) and status -------------------------------------------------------

    @guarded("get_tool_schemas", lambda *_, **__: [], instead="no tools", default=[])
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return self.tool_handler.schemas()

    @guarded("handle_tool_call", lambda *_, **__: _TOOL_FAILED, instead="the tool answers internal_error (JSON)")
    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return self.tool_handler.handle(name, args, kwargs.get("messages"))

    @guarded("get_status", lambda self: self._minimal_status(), instead="a minimal status saying so",
             default={"engine": ENGINE_NAME, "status_error": "internal_error"})
    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "engine": ENGINE_NAME, "active": True, "exact_estimators": _estimators(),
                **status.engine_status(self.requests, self.compaction, self.recall_binding),
                "reclaim": self.pruner.status(), "internal_errors": internal_errors()}

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


_TOOL_FAILED = results.dumps(results.error_dict("internal_error", "Baton failed around the tool; run `baton doctor`"))
