"""``BatonContextEngine``: Hermes' ContextEngine whose every compaction is a validated Baton handoff.

A thin adapter: it turns Hermes' calls into core calls (``request`` views, ``budget.decide``,
``compaction.cycle.run_cycle``) and their answers back into Hermes' shapes.

Why it holds only plain data: Hermes makes one engine per agent from the registered one (0.22:
``clone_for_agent``; 0.19: ``copy.deepcopy``) and silently falls back to its own compressor when that fails, so
the tokenizer client and locks live in ``runtime`` (process-wide) and each agent's engine keeps this agent's ids,
window, route, request ledger and memos (``docs/agents.md``). Agents never share per-request state. The state
survives Hermes' session-id rotation at compaction. Nothing here raises into the agent loop: decisions fall
back to "do not compress", ``compress()`` to a degraded, pair-safe list, request budgets to "leave the request
alone".
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.context_engine import ContextEngine

from baton_engine import budget, policy
from baton_engine.compaction import cycle, session
from baton_engine.handoff.capture import hash_session_id
from baton_engine.handoff.model import Owner
from baton_engine.handoff.owner import Scope, session_owner
from baton_engine.hermes import compaction_line, metrics, status, tools
from baton_engine.hermes.caller import register_engine_type
from baton_engine.hermes.config import ENGINE_NAME, installed_hermes_version
from baton_engine.hermes.engine_recall import RecallBinding
from baton_engine.hermes.engine_requests import AgentWindow, RequestBudgeter, ScanAhead
from baton_engine.hermes.ledger import Ledger, Route
from baton_engine.hermes.memos import AgentMemos
from baton_engine.hermes.project import Project
from baton_engine.hermes.runtime import DEFAULT_CONTEXT_LENGTH, RouteCounting, clock_now, get_runtime
from baton_engine.messages.markers import is_baton_message
from baton_engine.metrics.log import MetricsLog
from baton_engine.operations.context import host_counting
from baton_engine.recall import RecallSource, SessionStoreSource
from baton_engine.refusal import Refusal
from baton_engine.request import ProviderRequest
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import reported_prompt_tokens, usage_value

LOGGER = logging.getLogger("baton_engine.hermes")
FAILURE_COOLDOWN_SECONDS = 120.0
# What a new agent's engine takes from the registered one (``clone_for_agent``): configuration the plugin or the
# host set before any agent existed. Everything else (ledger, memos, session, handoff, policy) starts fresh.
AGENT_CONFIGURATION = ("threshold_percent", "protect_first_n", "protect_last_n", "context_length",
                       "threshold_tokens", "route")
HOST_SIZE = "hermes"  # the source of a size Hermes passes to should_compress (Baton's own estimate's number)


def hermes_version() -> str:
    return installed_hermes_version() or "unknown"


@register_engine_type
class BatonContextEngine(ContextEngine):
    """Exact-budget, handoff-based compaction for Hermes (``context.engine: baton``).

    Composed of explicit collaborators, each built from what it needs: ``project`` (which project, its
    settings), ``window`` (Hermes' context length and threshold, read and set by name through the properties
    below), ``requests`` (the request budgeter: route, ledger, memos, counting, ``budget.decide`` on each
    request), ``scan_ahead`` (the messages already scanned for the next compaction) and ``recall`` (where
    ``baton_recall`` reads). Hermes' hooks stay here and delegate."""

    def __init__(self, *, project_dir: str | os.PathLike[str] | None = None) -> None:
        self.project = Project(project_dir)
        self.window = AgentWindow(ContextEngine.threshold_percent)
        self.scan_ahead = ScanAhead()
        self.requests = RequestBudgeter(self.window, self.project, self.scan_ahead)
        self.recall_binding = RecallBinding(self.requests)
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0
        self.degraded_count = 0
        self.session_id: str | None = None
        self.session_rotations = 0
        self.objective: str | None = None
        self.session_draft_id: str | None = None
        self.last_handoff: dict[str, Any] | None = None  # the handoff this lineage continues (its parent-to-be)
        self.owner: Owner | None = None  # whose handoffs this session writes (platform + hashed conversation)
        self.scope = Scope.project()  # which handoffs it sees: its conversation's on a gateway, else the project
        self.last_handoff_path: str | None = None
        self.last_compaction: compaction_line.Compacted | None = None  # what the last compaction did (numbers)
        self.last_validation_warnings: tuple[str, ...] = ()
        self.degradation_reason: str | None = None
        self.degradation_detail: str | None = None
        self.not_initialised_notified = False
        self.policy = policy.PolicyState()
        self.failure_until = 0.0
        self.turns = 0
        self.last_compaction_scan: dict[str, int] | None = None  # region size, messages it scanned itself
        self.started_at = clock_now().timestamp()
        self.detector_state: dict[str, Any] = {}
        self.last_decision = "not evaluated yet"
        self.last_detector: dict[str, Any] | None = None
        self.adapter_version = f"hermes-{hermes_version()}"
        # Hermes' completed-compaction latch (0.19+ read these by name): compress() says whether it rewrote the
        # list; the host then arms the latch (``record_completed_compaction``) and 0.22 re-arms its per-turn
        # compaction budget when the next response's prompt is below ``threshold_tokens`` (update_from_response
        # consumes it).
        self._last_compression_made_progress = False
        self._verify_compaction_cleared_threshold = False
        self.requests.fit_window()

    # ---- what Hermes and the tools read and set by name, held by the collaborators ----------------------

    @property
    def project_dir(self) -> Path | None:
        return self.project.explicit

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

    @property
    def ledger(self) -> Ledger:
        return self.requests.ledger

    @property
    def memos(self) -> AgentMemos:
        return self.requests.memos

    @property
    def metrics(self) -> MetricsLog:
        return self.requests.metrics

    @property
    def scanned_upto(self) -> int:
        return self.scan_ahead.upto

    @scanned_upto.setter
    def scanned_upto(self, value: int) -> None:
        self.scan_ahead.upto = value

    @property
    def session_db(self) -> Any:
        return self.recall_binding.session_db

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

    @property
    def model(self) -> str | None:
        return self.route.model

    def _project_dir(self) -> Path:
        return self.project.path()

    def project_path(self) -> Path:
        """The project the tools act on (``tools.ToolHost``): the same as the engine's."""
        return self.project.path()

    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "",
                     provider: str = "", api_mode: str = "", **_: Any) -> None:
        """``/model``, a fallback provider or start-up: the route and window this agent budgets; never raises."""
        try:
            self.move_route(self.route.moved(model=model, base_url=base_url, provider=provider, api_mode=api_mode,
                                             why="update_model"))
            self._apply_model_threshold(model, provider)
            ok = isinstance(context_length, int) and not isinstance(context_length, bool) and context_length > 0
            self.requests.set_context_length(context_length if ok else DEFAULT_CONTEXT_LENGTH)
        # Hermes calls update_model at start-up, /model and fallback: never raise into the agent
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton update_model failed type=%s", type(exc).__name__)

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

    def move_route(self, route: Route) -> None:
        self.requests.move_route(route)

    def learn_window(self, window: int) -> None:
        self.requests.learn_window(window)

    def window_source(self) -> tuple[int, str]:
        return self.requests.window_source()

    def effective_window(self) -> int:
        return self.requests.effective_window()

    def limits(self, tokens: int | None = None) -> policy.Limits:
        return self.requests.limits(tokens)

    def count(self, view: ProviderRequest) -> TokenCount:
        return self.requests.count(view)

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        return self.requests.count_estimate(messages, system_prompt=system_prompt, tools=tools)

    def on_request(self, request: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
        return self.requests.on_request(request, **kwargs)

    def on_auxiliary(self, request: dict[str, Any], *, base_url: Any = None) -> dict[str, Any] | None:
        return self.requests.on_auxiliary(request, base_url=base_url)

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        return self.requests.aux_matches_route(model, base_url)

    def observe_refusal(self, refusal: Refusal) -> None:
        self.requests.observe_refusal(refusal)

    def observe_reported(self, prompt_tokens: int) -> None:
        self.requests.observe_reported(prompt_tokens)

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Real usage: Hermes' counters, and the exact size of the request just sent (the anchor). Consumes
        the completed-compaction latch: Hermes 0.22 read it just before this call, and it answers only the
        first response after the compaction."""
        self._verify_compaction_cleared_threshold = False
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.turns += 1
        self.requests.observe_reported(reported_prompt_tokens(usage))

    def on_turn_complete(self, messages: Any = None, usage: Any = None, **_: Any) -> None:
        """Hermes 0.20+: the usage of the turn's last response, which answers the last request sent. It feeds
        the anchor and the route's verification when ``update_from_response`` did not already report that
        request's size (0.22 reports both; a host path that skips update_from_response does not)."""
        try:
            if isinstance(usage, dict) and not self.ledger.usage_observed():
                self.requests.observe_reported(reported_prompt_tokens(usage))
        # Hermes' on_turn_complete contract: an observe-only hook, never raise into the finished turn
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton on_turn_complete failed type=%s", type(exc).__name__)

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

    # ---- when to compact -------------------------------------------------------------------------

    def _settings(self) -> Any:
        return self.project.settings()

    def _evaluate_detector(self, tokens: int, explicit: bool, now: Any = None) -> Any:
        now = now or get_runtime().now()
        return session.evaluate_detector(
            self._project_dir(), tokens=tokens, window=self.threshold_tokens, turns=self.turns,
            elapsed_seconds=now.timestamp() - self.started_at, explicit=explicit, state=self.detector_state,
            draft_id=self.session_draft_id, now=now)

    def _detector_trigger(self, tokens: int) -> str | None:
        result = self._evaluate_detector(tokens, explicit=False)
        if result is None:
            return None
        self.last_detector = result.to_json_dict()
        if result.auto_prepare:
            return f"detector pressure {result.pressure:.2f} with readiness {result.readiness}"
        return None

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.should_compress_info(prompt_tokens)[0]

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(compact?, why a request at or above the trigger is held back)``: Hermes 0.22 asks after a "no" and
        warns the user with the reason ("over the threshold but compression is blocked"), so a reason is given
        only for a block (the anti-thrash cooldown), None below the trigger. The reason of every decision is
        ``last_decision`` (status)."""
        try:
            tokens = prompt_tokens if isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool) \
                else self.last_prompt_tokens
            limits = self.limits(tokens if isinstance(tokens, int) else None)
            self.requests.warn_raised(limits)
            decision = budget.decide(TokenCount(tokens, False, HOST_SIZE), limits, state=self.policy,
                                     awaiting_usage=self.last_prompt_tokens == -1,
                                     detector=lambda: self._detector_trigger(tokens))
        # Hermes asks should_compress inside its agent loop: a failed decision is "do not compress", never an
        # exception into run_conversation
        except Exception as exc:  # noqa: BLE001
            decision = budget.Decision("leave", f"decision failed: {type(exc).__name__}")
        self.last_decision = decision.reason
        return decision.compact, decision.reason if decision.held else None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """Never: while Baton is active the pre-flight number is an exact count, not a noisy estimate."""
        return False

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        live = [m for m in messages or [] if isinstance(m, dict) and m.get("role") != "system"
                and not is_baton_message(m)]
        return len(live) > 1

    def get_automatic_compaction_status_message(self, *, phase: str, default_message: str = "",
                                                 **context: Any) -> str | None:
        """Hermes 0.22 prints this line for an automatic compaction instead of its own ("Compacting context —
        summarizing earlier conversation...", false for Baton). It asks before ``compress()`` at each phase
        (``preflight``/``pre_api``/``idle`` announce, ``compress`` starts): Baton says one line, at ``compress``
        (``compaction_line``); None elsewhere and when ``emit_automatic_compaction_status`` is off."""
        try:
            if not getattr(self, "emit_automatic_compaction_status", True) or phase != "compress":
                return None
            return compaction_line.starting(self, context.get("approx_tokens"))
        # Hermes 0.22 prints this line before compress(): a status line must never break its compaction
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton compaction status failed type=%s", type(exc).__name__)
            return None

    def get_active_compression_failure_cooldown(self, **_: Any) -> dict[str, Any] | None:
        remaining = self.failure_until - time.time()
        if remaining <= 0:
            return None
        return {"remaining_seconds": remaining, "reason": self.degradation_reason or "compaction failure"}

    def request_handoff(self) -> None:
        """An explicit request: the next ``should_compress`` says yes, whatever the cooldown."""
        self.policy = replace(self.policy, explicit=True)

    # ---- the cycle -------------------------------------------------------------------------------

    def prepare_compaction(self, messages: Any) -> None:
        """Scan the messages this request added ahead for the next compaction (``ScanAhead``); never raises."""
        self.scan_ahead.observe(messages)

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False, memory_context: str = "",
                 **_: Any) -> list[dict[str, Any]]:
        """One Baton handoff cycle; never raises, never returns an empty list."""
        self._last_compression_made_progress = False
        try:
            return self._compress(messages, current_tokens, focus_topic, force)
        # Hermes calls compress() inside its agent loop and needs a list back: never raise into run_conversation,
        # never return an empty list
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton compress failed type=%s", type(exc).__name__)
            self.degradation_reason, self.degradation_detail = "internal_error", type(exc).__name__
            return list(messages or [])

    def _compress(self, messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None,
                  force: bool) -> list[dict[str, Any]]:
        runtime = get_runtime()
        started = time.perf_counter()
        settings = self._settings()
        now = runtime.now()  # one reading: the detector state, the record's id and timestamps all use it
        view = self.ledger.view_of(messages, self.memos)
        before = self.ledger.trigger_count(current_tokens) or self.count(view)
        limits = self.limits()
        self.requests.warn_raised(limits)
        tokens = before.tokens if before.tokens is not None else (current_tokens or 0)
        result = self._evaluate_detector(tokens, explicit=self.policy.explicit or force, now=now)
        automation = session.automation(result, f"Hermes compaction at {tokens} request tokens "
                                                f"(trigger {limits.trigger})", self.last_decision)
        if result is not None and result.recommend:
            self.detector_state = result.new_state.to_json_dict()
        counting = self.counting()
        measure = self.ledger.measure(before, view, counting)
        room, tail_tokens = self.ledger.tail_budgets(view, messages, measure, limits,
                                                     configured_tail=settings.fresh_tail_tokens)
        facts = cycle.SessionFacts(
            project_dir=self._project_dir(), session_id=self.session_id, model=self.model,
            adapter_version=self.adapter_version, objective=self.objective,
            session_draft_id=self.session_draft_id,
            previous_handoff_id=(self.last_handoff or {}).get("id"), automation=automation,
            owner=self._owner_json(),
            brief_max_tokens=settings.brief_max_tokens, fresh_tail_tokens=tail_tokens,
            degradation_keep_recent=settings.degradation_keep_recent,
            degradation_max_tokens=policy.degraded_tail_tokens(self.threshold_tokens, settings.degradation_max_tokens),
            inflight_tokens=room, now=now, recall=self.recall_binding.hooks(self.session_id),
        )
        try:
            outcome = cycle.run_cycle(list(messages or []), facts, count_messages=measure.count_messages,
                                      count_text=measure.count_text, counter_source=counting.source(),
                                      focus_topic=focus_topic, tokenizer_down=before.fallback_reason is not None)
        # Hermes calls compress() inside its agent loop: an unexpected cycle failure is the degraded, pair-safe list
        # the cycle builds for it, never an exception into run_conversation
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton compaction failed type=%s", type(exc).__name__)
            outcome = cycle.degraded(list(messages or []), facts, "internal_error", measure.count_messages,
                                     f"internal error: {type(exc).__name__}")
        self._absorb(outcome)
        self.scanned_upto = 0  # a new list: the next requests scan its new messages (the block, stubs) ahead
        after = self.count(self.memos.keyed(view.with_conversation(outcome.messages)))
        metrics.compaction(self, outcome, before, after, seconds=time.perf_counter() - started)
        self.last_compaction = compaction_line.Compacted.of(outcome, before=tokens, after=after.tokens)
        self._last_compression_made_progress = (after.tokens < tokens if after.tokens is not None and tokens
                                                else len(outcome.messages or ()) < len(messages or ()))
        if after.tokens is not None:
            self.policy = policy.after_compaction(self.policy, after.tokens, limits)
        else:
            self.policy = replace(self.policy, explicit=False)
        return outcome.messages or list(messages or [])

    def record_completed_compaction(self, **_: Any) -> None:
        """Hermes (0.19+): a compaction that made progress was committed; arm the latch the next response's
        usage is judged by (0.22 re-arms its per-turn compaction budget on it). Baton judges its own
        compactions by exact counts (``policy.after_compaction``): the host's fallback and feasibility flags
        change nothing here."""
        self._verify_compaction_cleared_threshold = True

    def _absorb(self, outcome: cycle.CycleOutcome) -> None:
        self.degradation_reason, self.degradation_detail = outcome.degraded, outcome.detail
        self.last_compaction_scan = outcome.extras.get("scan")
        stored = outcome.handoff is not None and outcome.validation_status in ("pass", "warn")
        if stored:
            self.compression_count += 1
            self.last_handoff = outcome.handoff
            self.last_handoff_path = outcome.path
            self.last_validation_warnings = outcome.warnings
            self.session_draft_id = None
        if outcome.degraded and outcome.degraded != "tokenizer_down":
            self.degraded_count += 1
            if outcome.degraded == "internal_error":
                self.failure_until = time.time() + FAILURE_COOLDOWN_SECONDS
            if outcome.degraded == "not_initialised" and not self.not_initialised_notified:
                self.not_initialised_notified = True
                LOGGER.warning("Baton is not initialised for this project: run `baton init` in the project root "
                               "so compactions become handoffs (kept recent messages only)")

    # ---- session lifecycle -----------------------------------------------------------------------

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A rotation at compaction keeps every bit of state; any other start (a new agent, ``/new``,
        ``/resume``) is a session of its own: it takes its owner from the host and continues only its own
        lineage (see ``_start_lineage``)."""
        try:
            rotation = kwargs.get("boundary_reason") == "compression"
            if kwargs.get("model"):
                self.move_route(self.route.moved(model=str(kwargs["model"]), why="session start"))
            if rotation:  # Hermes 0.19 also signals an in-place compaction this way, with the same id
                moved = bool(session_id) and session_id != self.session_id
                if moved:
                    self.recall_binding.rotated(session_id)
                self.session_id = session_id or self.session_id
                self.session_rotations += int(moved)
            else:
                self.session_id = session_id
                self.recall_binding.new_lineage()  # a new conversation: a new lineage
                self._reset_session_state()
                self._start_lineage(session_id, kwargs)
            get_runtime().engines.remember(self.session_id, self)
        # Hermes calls on_session_start at agent start, /new, /resume and rotation: never raise into the agent's start
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton on_session_start failed type=%s", type(exc).__name__)

    def _start_lineage(self, session_id: str, kwargs: dict[str, Any]) -> None:
        """The owner and scope of a new session, and the handoff it continues: on a gateway (sharing off) its
        conversation's latest ready handoff, else the latest one this session's own lineage wrote (a resumed
        session); never merely the project's latest. A summary only: the brief is rendered by baton_resume
        when asked, never at session start (no tokenizer call, no git)."""
        self.owner = session_owner(kwargs.get("platform"), kwargs.get("conversation_id"), session_id)
        self.scope = Scope.for_session(self.owner, share=self._settings().share_handoffs)
        own = None if not self.scope.project_wide else self._session_lineage(session_id)
        self.last_handoff = session.latest_ready_summary(self._project_dir(), self.scope, own)
        self.requests.metrics = metrics.start(self, session_id)

    def _session_lineage(self, session_id: str) -> list[str]:
        """This session and its compression ancestors (Hermes' SessionDB when bound), hashed as records
        store them."""
        ids = [session_id]
        if self.session_db is not None and session_id:
            try:
                ids = SessionStoreSource(self.session_db, session_id).lineage()
            # Hermes' SessionDB is the host's object (sqlite, its own schema): a broken store only narrows the
            # lineage, never fails the session start
            except Exception as exc:  # noqa: BLE001
                LOGGER.warning("baton session lineage unreadable type=%s", type(exc).__name__)
        return [hashed for hashed in (hash_session_id(i) for i in ids) if hashed]

    def continue_from(self, handoff: dict[str, Any]) -> None:
        """``baton_resume`` answered with ``handoff``: this session now continues it (its next handoff's parent)."""
        if handoff.get("status") in ("ready", "resumed"):
            self.last_handoff = dict(handoff)

    def _owner_json(self) -> dict[str, Any] | None:
        return self.owner.model_dump(mode="json") if self.owner is not None else None

    def _reset_session_state(self) -> None:
        self.objective = None
        self.scanned_upto = 0
        self.session_draft_id = None
        self.turns = 0
        self.started_at = clock_now().timestamp()
        self.detector_state = {}
        self.policy = policy.PolicyState()
        self.last_detector = None
        self._verify_compaction_cleared_threshold = False

    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: per-session detector state and token counters; the handoff lineage stays
        until the next session start says whose session follows."""
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self._reset_session_state()

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Draft checkpoint when the detector recommends and ``auto_checkpoint_on_end`` is set; never ready."""
        try:
            if not self._settings().auto_checkpoint_on_end or self.session_draft_id:
                return
            result = self._evaluate_detector(max(self.last_prompt_tokens, 0), explicit=False)
            if result is None or not result.recommend:
                return
            self.ensure_session_draft(messages)
        # Hermes calls on_session_end while it shuts the session down: never raise into its exit path
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton on_session_end failed type=%s", type(exc).__name__)

    # ---- tools -----------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(schema) for schema in tools.SCHEMAS]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        messages = kwargs.get("messages")
        # baton_resume counts like the engine: this session's settings, its route's counter
        with host_counting(self._settings(), self.counting().counter):
            return tools.handle(self, name, args, messages if isinstance(messages, list) else None)

    def set_objective(self, text: str) -> None:
        self.objective = text

    def ensure_session_draft(self, messages: list[dict[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        """The session's working draft (created on first use) that baton_capture records into."""
        if self.session_draft_id:
            return self.session_draft_id, None
        origin = {"harness": "generic", "adapter_version": self.adapter_version, "session_id": self.session_id,
                  "model": self.model, "actor": {"type": "agent", "name": "hermes"}, "owner": self._owner_json()}
        draft_id, failure = session.create_draft(self._project_dir(), objective=self.objective,
                                                 messages=messages or [], origin=origin,
                                                 previous_handoff_id=(self.last_handoff or {}).get("id"))
        self.session_draft_id = draft_id or None
        return draft_id, failure

    # ---- status ----------------------------------------------------------------------------------

    # ---- recall (``recall_binding``) --------------------------------------------------------------

    def bind_session_state(self, session_db: Any = None, session_id: str | None = None, **_: Any) -> None:
        """Hermes hands its session store (or None) and the session id; recall then reads that store."""
        self.recall_binding.bind(session_db)
        if session_id:
            self.session_id = session_id

    def recall_status(self) -> dict[str, Any]:
        return self.recall_binding.status(self.session_id)

    def recall_source(self) -> RecallSource:
        return self.recall_binding.source(self.session_id)

    def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        """``baton_recall`` over this lineage (``tools.ToolHost``)."""
        return self.recall_binding.recall(args, self.session_id)

    def agent_status(self) -> dict[str, Any]:
        """The engine part of ``baton_status`` (``tools.ToolHost``)."""
        return status.agent_status(self)

    def get_status(self) -> dict[str, Any]:
        base = super().get_status()
        try:
            base.update(status.engine_status(self))
        # Hermes' /status and the gateway read get_status(): the base status with the error's type, never an exception
        except Exception as exc:  # noqa: BLE001
            base["status_error"] = type(exc).__name__
        return base
