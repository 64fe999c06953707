"""One agent's compaction side: when to compact, each compaction as a handoff, and the session lineage those
handoffs form (owner, scope, parent, the working draft).

Why a collaborator of its own: a compaction reads the request side (counts, limits, tail budgets) and recall,
but none of its host's lifecycle; its state (policy, detector, degradation, the lineage and draft) is plain data
here, so a host's per-agent copy (Hermes 0.19's deepcopy) takes it whole and the engine's hooks stay one line each.
The host's name comes from the request budgeter's host (``agent/host.Host``).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from baton_engine import budget, policy
from baton_engine.agent import metrics
from baton_engine.agent import compaction_line
from baton_engine.agent.ledger import Measure
from baton_engine.agent.project import Project
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import RequestBudgeter, ScanAhead
from baton_engine.agent.runtime import clock_now, get_runtime
from baton_engine.compaction import cycle, session
from baton_engine.handoff.capture import hash_session_id
from baton_engine.handoff.model import Owner
from baton_engine.handoff.owner import Scope, session_owner
from baton_engine.messages.markers import is_baton_message
from baton_engine.recall import SessionStoreSource
from baton_engine.request import ProviderRequest
from baton_engine.settings import BatonSettings
from baton_engine.tokens.contract import TokenCount

LOGGER = logging.getLogger("baton_engine.agent")
FAILURE_COOLDOWN_SECONDS = 120.0


@dataclass(frozen=True)
class Compression:
    """What ``compress`` hands back to the engine: the new list and whether it made progress (the host's latch)."""

    messages: list[dict[str, Any]]
    progressed: bool


class _Plan(NamedTuple):
    """What one compaction works from (``CompactionRunner._plan``)."""

    started: float
    view: ProviderRequest
    before: TokenCount
    tokens: int
    limits: policy.Limits
    counting: Any
    measure: Measure
    facts: cycle.SessionFacts


class CompactionRunner:
    """One agent's compactions and the session they belong to: the policy and detector that say when, the cycle
    that writes the handoff, what it degraded to and the failure cooldown, and the session's id, owner, scope,
    parent handoff, objective and working draft."""

    def __init__(self, requests: RequestBudgeter, recall: RecallBinding, project: Project, scan_ahead: ScanAhead,
                 *, adapter_version: str) -> None:
        self.requests = requests
        self.recall = recall
        self.project = project
        self.scan_ahead = scan_ahead
        self.adapter_version = adapter_version
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
        self.compacting = False  # inside compress(): no prune runs then
        self.last_detector: dict[str, Any] | None = None

    def settings(self) -> BatonSettings:
        return self.project.settings()

    # ---- when to compact -------------------------------------------------------------------------

    def evaluate_detector(self, tokens: int, explicit: bool, now: Any = None) -> Any:
        now = now or get_runtime().now()
        return session.evaluate_detector(
            self.project.path(), tokens=tokens, window=self.requests.window.threshold_tokens, turns=self.turns,
            elapsed_seconds=now.timestamp() - self.started_at, explicit=explicit, state=self.detector_state,
            draft_id=self.session_draft_id, now=now)

    def _detector_trigger(self, tokens: int) -> str | None:
        result = self.evaluate_detector(tokens, explicit=False)
        if result is None:
            return None
        self.last_detector = result.to_json_dict()
        if result.auto_prepare:
            return f"detector pressure {result.pressure:.2f} with readiness {result.readiness}"
        return None

    def decide(self, tokens: int, *, awaiting_usage: bool) -> budget.Decision:
        """Compact a request of ``tokens`` (the host's number: Baton's own estimate's, while its estimators are
        installed)? ``budget.decide`` with this session's policy and detector."""
        limits = self.requests.limits(tokens if isinstance(tokens, int) else None)
        self.requests.warn_raised(limits)
        host_size = self.requests.host.name.lower()  # the source of a size the host passes
        return budget.decide(TokenCount(tokens, False, host_size), limits, state=self.policy,
                             awaiting_usage=awaiting_usage, detector=lambda: self._detector_trigger(tokens))

    def failure_cooldown(self) -> dict[str, Any] | None:
        remaining = self.failure_until - time.time()
        if remaining <= 0:
            return None
        return {"remaining_seconds": remaining, "reason": self.degradation_reason or "compaction failure"}

    def request_handoff(self) -> None:
        """An explicit request: the next ``should_compress`` says yes, whatever the cooldown."""
        self.policy = replace(self.policy, explicit=True)

    @staticmethod
    def has_content_to_compress(messages: list[dict[str, Any]]) -> bool:
        live = [m for m in messages or [] if isinstance(m, dict) and m.get("role") != "system"
                and not is_baton_message(m)]
        return len(live) > 1

    def starting_line(self, approx_tokens: Any) -> str:
        """The line the host shows as an automatic compaction starts (Hermes 0.22; ``compaction_line``)."""
        recall = self.recall.status(self.session_id)["source"]
        return compaction_line.starting(self.requests, approx_tokens, recall=recall, previous=self.last_compaction)

    # ---- the cycle -------------------------------------------------------------------------------

    def failed(self, error: str) -> None:
        """A compaction raised (the host's boundary answers ``degraded`` instead): said by status as an internal
        error."""
        self.degradation_reason, self.degradation_detail = "internal_error", error

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None,
                 force: bool) -> Compression:
        """One handoff cycle. Its expected failures degrade inside the cycle; an unexpected one (a bug) raises to the
        host's boundary, whose fallback is ``degraded``."""
        self.compacting = True
        try:
            plan = self._plan(messages, current_tokens, force, evaluate=True)
            counting = plan.counting
            outcome = cycle.run_cycle(list(messages or []), plan.facts, count_messages=plan.measure.count_messages,
                                      count_text=plan.measure.count_text, counter_source=counting.source(),
                                      focus_topic=focus_topic, tokenizer_down=plan.before.fallback_reason is not None)
            return self._finish(plan, outcome, messages)
        finally:
            self.compacting = False

    def degraded(self, messages: list[dict[str, Any]], current_tokens: int | None) -> Compression:
        """What a compaction that raised hands the host instead (its boundary's fallback): the degraded, pair-safe
        list of the recent messages, recorded, counted and cooled down like any degraded compaction, so the host's
        agent keeps its progress."""
        plan = self._plan(messages, current_tokens, False, evaluate=False)
        outcome = cycle.degraded(list(messages or []), plan.facts, "internal_error", plan.measure.count_messages,
                                 f"internal error: {self.degradation_detail or 'unknown'}")
        return self._finish(plan, outcome, messages)

    def _plan(self, messages: list[dict[str, Any]], current_tokens: int | None, force: bool, *,
              evaluate: bool) -> _Plan:
        """What a compaction of ``messages`` works from: the count before, the limits, how it counts, the session's
        facts (``evaluate``: the detector is asked, and its state moves, once per compaction)."""
        runtime = get_runtime()
        started = time.perf_counter()
        settings = self.settings()
        now = runtime.now()  # one reading: the detector state, the record's id and timestamps all use it
        requests = self.requests
        view = requests.view_of(messages)
        before = requests.ledger.trigger_count(current_tokens) or requests.count(view)
        limits = requests.limits()
        tokens = before.tokens if before.tokens is not None else (current_tokens or 0)
        automation = None
        if evaluate:
            requests.warn_raised(limits)
            result = self.evaluate_detector(tokens, explicit=self.policy.explicit or force, now=now)
            automation = session.automation(result, f"{requests.host.name} compaction at {tokens} request tokens "
                                                    f"(trigger {limits.trigger})", self.last_decision)
            if result is not None and result.recommend:
                self.detector_state = result.new_state.to_json_dict()
        counting = requests.counting()
        measure = requests.ledger.measure(before, view, counting)
        room, tail_tokens = requests.ledger.tail_budgets(view, messages, measure, limits,
                                                         configured_tail=settings.fresh_tail_tokens)
        facts = cycle.SessionFacts(
            project_dir=self.project.path(), session_id=self.session_id, model=requests.route.model,
            adapter_version=self.adapter_version, objective=self.objective,
            session_draft_id=self.session_draft_id,
            previous_handoff_id=(self.last_handoff or {}).get("id"), automation=automation,
            owner=self.owner_json(),
            brief_max_tokens=settings.brief_max_tokens, fresh_tail_tokens=tail_tokens,
            degradation_keep_recent=settings.degradation_keep_recent,
            degradation_max_tokens=policy.degraded_tail_tokens(requests.window.threshold_tokens,
                                                               settings.degradation_max_tokens),
            inflight_tokens=room, now=now, recall=self.recall.hooks(self.session_id),
        )
        return _Plan(started, view, before, tokens, limits, counting, measure, facts)

    def _finish(self, plan: _Plan, outcome: cycle.CycleOutcome, messages: list[dict[str, Any]]) -> Compression:
        """The compaction's outcome taken in: state, metrics, the compaction line, the policy after it."""
        requests, tokens = self.requests, plan.tokens
        self._absorb(outcome)
        self.scan_ahead.upto = 0  # a new list: the next requests scan its new messages (the block, stubs) ahead
        after = requests.count(requests.memos.keyed(plan.view.with_conversation(outcome.messages)))
        metrics.compaction(requests, outcome, plan.before, after, seconds=time.perf_counter() - plan.started)
        self.last_compaction = compaction_line.Compacted.of(outcome, before=tokens, after=after.tokens)
        progressed = (after.tokens < tokens if after.tokens is not None and tokens
                      else len(outcome.messages or ()) < len(messages or ()))
        if after.tokens is not None:
            self.policy = policy.after_compaction(self.policy, after.tokens, plan.limits)
        else:
            self.policy = replace(self.policy, explicit=False)
        return Compression(outcome.messages or list(messages or []), progressed)

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

    # ---- the session and its lineage -------------------------------------------------------------

    def rotated(self, session_id: str) -> None:
        """The host rotated the session id at compaction (Hermes 0.19 also signals an in-place compaction this way,
        with the same id): every bit of state stays."""
        moved = bool(session_id) and session_id != self.session_id
        if moved:
            self.recall.rotated(session_id)
        self.session_id = session_id or self.session_id
        self.session_rotations += int(moved)

    def start(self, session_id: str, *, platform: Any, conversation_id: Any) -> None:
        """A session of its own (a new agent, ``/new``, ``/resume``): a new lineage, fresh session state, and
        the handoff it continues (``_start_lineage``)."""
        self.session_id = session_id
        self.recall.new_lineage()  # a new conversation: a new lineage
        self.reset()
        self._start_lineage(session_id, platform, conversation_id)

    def _start_lineage(self, session_id: str, platform: Any, conversation_id: Any) -> None:
        """The owner and scope of a new session, and the handoff it continues: on a gateway (sharing off) its
        conversation's latest ready handoff, else the latest one this session's own lineage wrote (a resumed
        session); never merely the project's latest. A summary only: the brief is rendered by baton_resume
        when asked, never at session start (no tokenizer call, no git)."""
        self.owner = session_owner(platform, conversation_id, session_id)
        self.scope = Scope.for_session(self.owner, share=self.settings().share_handoffs)
        own = None if not self.scope.project_wide else self._session_lineage(session_id)
        self.last_handoff = session.latest_ready_summary(self.project.path(), self.scope, own)
        self.requests.metrics = metrics.start(self.requests, session_id, owner=self.owner_json(),
                                              adapter=self.adapter_version)

    def _session_lineage(self, session_id: str) -> list[str]:
        """This session and its compression ancestors (the host's session store when bound), hashed as records
        store them."""
        ids = [session_id]
        if self.recall.session_db is not None and session_id:
            try:
                ids = SessionStoreSource(self.recall.session_db, session_id).lineage()
            # the host's store (Hermes' SessionDB is sqlite) locked or broken: the lineage narrows to this session
            except (sqlite3.Error, OSError) as exc:
                LOGGER.warning("baton session lineage unreadable type=%s", type(exc).__name__)
        return [hashed for hashed in (hash_session_id(i) for i in ids) if hashed]

    def continue_from(self, handoff: dict[str, Any]) -> None:
        """``baton_resume`` answered with ``handoff``: this session now continues it (its next handoff's parent)."""
        if handoff.get("status") in ("ready", "resumed"):
            self.last_handoff = dict(handoff)

    def owner_json(self) -> dict[str, Any] | None:
        return self.owner.model_dump(mode="json") if self.owner is not None else None

    def reset(self) -> None:
        """Per-session detector and policy state (``/new``, ``/reset``, a new session); the lineage stays."""
        self.objective = None
        self.scan_ahead.upto = 0
        self.session_draft_id = None
        self.turns = 0
        self.started_at = clock_now().timestamp()
        self.detector_state = {}
        self.policy = policy.PolicyState()
        self.last_detector = None

    def ended(self, messages: list[dict[str, Any]], prompt_tokens: int) -> None:
        """Draft checkpoint when the detector recommends and ``auto_checkpoint_on_end`` is set; never ready."""
        if not self.settings().auto_checkpoint_on_end or self.session_draft_id:
            return
        result = self.evaluate_detector(max(prompt_tokens, 0), explicit=False)
        if result is None or not result.recommend:
            return
        self.ensure_session_draft(messages)

    def set_objective(self, text: str) -> None:
        self.objective = text

    def ensure_session_draft(self, messages: list[dict[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        """The session's working draft (created on first use) that baton_capture records into."""
        if self.session_draft_id:
            return self.session_draft_id, None
        origin = {"harness": "generic", "adapter_version": self.adapter_version, "session_id": self.session_id,
                  "model": self.requests.route.model,
                  "actor": {"type": "agent", "name": self.requests.host.name.lower()},
                  "owner": self.owner_json()}
        draft_id, failure = session.create_draft(self.project.path(), objective=self.objective,
                                                 messages=messages or [], origin=origin,
                                                 previous_handoff_id=(self.last_handoff or {}).get("id"))
        self.session_draft_id = draft_id or None
        return draft_id, failure
