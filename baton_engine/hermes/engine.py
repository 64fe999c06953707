"""``BatonContextEngine``: Hermes' ContextEngine whose every compaction is a validated Baton handoff.

Why it holds only plain data: Hermes deep-copies the registered engine per agent and silently falls back
to its own compressor when the copy fails, so the tokenizer client, locks and settings live in
``runtime`` (process-wide) and the engine keeps ids, counters, its own window and small strings.
Constructing an engine changes nothing outside it; ``update_model`` records this agent's window in the
runtime's per-agent registry so the request middleware budgets each agent's requests against its own. The state survives
Hermes' session-id rotation at compaction (``on_session_start(..., boundary_reason="compression")``).
Nothing here raises into the agent loop: decisions fall back to "do not compress", ``compress()``
falls back to a degraded, pair-safe list.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from agent.context_engine import ContextEngine

from baton_engine import operations
from baton_engine.compaction import is_baton_message
from baton_engine.errors import BatonError
from baton_engine.handoff import capture, detector, lineage, render, store
from baton_engine.handoff.config import DetectorConfig, load_config
from baton_engine.hermes import cycle, tools
from baton_engine.hermes.config import ENGINE_NAME
from baton_engine.hermes.runtime import Window, clock_now, get_runtime, usage_value
from baton_engine.tokens.rough import estimate_chat_request

LOGGER = logging.getLogger("baton_engine.hermes")
DEFAULT_CONTEXT_LENGTH = 131072
FAILURE_COOLDOWN_SECONDS = 120.0
GROWTH_SHARE = 10  # after a compaction the next one needs threshold/10 tokens of real growth
DEFAULT_TAIL_SHARE = 4  # default fresh tail: a quarter of the compaction window, at most 8,192 tokens
DEFAULT_TAIL_CAP = 8192


def hermes_version() -> str:
    try:
        return metadata.version("hermes-agent")
    except metadata.PackageNotFoundError:
        return "unknown"


class BatonContextEngine(ContextEngine):
    """Exact-budget, handoff-based compaction for Hermes (``context.engine: baton``)."""

    def __init__(self, *, project_dir: str | os.PathLike[str] | None = None) -> None:
        self.project_dir = Path(project_dir) if project_dir is not None else None
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0
        self.degraded_count = 0
        self.model: str | None = None
        self.base_url: str | None = None
        self.window_from_host = False
        self.session_id: str | None = None
        self.session_rotations = 0
        self.objective: str | None = None
        self.session_draft_id: str | None = None
        self.explicit_request = False
        self.last_handoff: dict[str, Any] | None = None
        self.last_handoff_path: str | None = None
        self.last_validation_warnings: tuple[str, ...] = ()
        self.staged_brief: str | None = None
        self.staged_stale: bool | None = None
        self.degradation_reason: str | None = None
        self.degradation_detail: str | None = None
        self.not_initialised_notified = False
        self.post_compaction_tokens: int | None = None
        self.failure_until = 0.0
        self.turns = 0
        self.started_at = clock_now().timestamp()
        self.detector_state: dict[str, Any] = {}
        self.last_decision = "not evaluated yet"
        self.last_detector: dict[str, Any] | None = None
        self.adapter_version = f"hermes-{hermes_version()}"
        self._set_window(DEFAULT_CONTEXT_LENGTH)

    # ---- identity and host attributes -------------------------------------------------------------

    @property
    def name(self) -> str:
        return ENGINE_NAME

    def is_available(self) -> bool:
        return True

    def _project_dir(self) -> Path:
        return self.project_dir if self.project_dir is not None else Path.cwd()

    def _set_window(self, length: int) -> None:
        """This engine's window and threshold, reserving the output budget; touches nothing shared."""
        self.context_length = length
        self.threshold_tokens = self._threshold_for(length)

    def _threshold_for(self, length: int) -> int:
        try:
            return get_runtime().threshold_for(length, self.threshold_percent)
        except ValueError:
            return int(length * self.threshold_percent)

    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "",
                     provider: str = "", api_mode: str = "", **_: Any) -> None:
        """This agent's window (recorded for its requests' output clamp) and threshold; never raises."""
        try:
            self.model = model or self.model
            self.base_url = base_url or self.base_url
            ok = isinstance(context_length, int) and not isinstance(context_length, bool) and context_length > 0
            self._set_window(context_length if ok else DEFAULT_CONTEXT_LENGTH)
            self.window_from_host = True
            self._remember_window(route=True)
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton update_model failed type=%s", type(exc).__name__)

    def _remember_window(self, *, route: bool = False) -> None:
        """Tell the middleware this agent's window by session id (and by route when Hermes just set it);
        only a window Hermes gave, never the constructor's default."""
        if self.window_from_host:
            get_runtime().windows.remember(self.context_length, session_id=self.session_id,
                                           route=(self.model, self.base_url) if route else None)

    def effective_window(self) -> Window:
        """Hermes' context_length, or the serving model's smaller window once the server reported it.

        Lowers the threshold to fit that window (only ever lowers: Hermes may have lowered it too)."""
        window = get_runtime().window(self.context_length)
        if window.effective < self.context_length:
            self.threshold_tokens = min(self.threshold_tokens, self._threshold_for(window.effective))
        return window

    def update_from_response(self, usage: dict[str, Any]) -> None:
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.turns += 1

    # ---- when to compact -------------------------------------------------------------------------

    def _settings(self) -> Any:
        return get_runtime().settings

    def _detector_config(self) -> DetectorConfig | None:
        paths = store.find_project_root(self._project_dir().resolve())
        if paths is None:
            return None
        try:
            return load_config(paths.data_dir).detector
        except Exception:  # noqa: BLE001 - a broken project config never breaks the agent loop
            return None

    def _evaluate_detector(self, tokens: int, explicit: bool,
                           now: datetime | None = None) -> detector.DetectorResult | None:
        config = self._detector_config()
        if config is None:
            return None
        now = now or get_runtime().now()
        signals = detector.DetectorSignals(
            context_tokens=max(tokens, 0), context_window=max(self.threshold_tokens, 1), turns=self.turns,
            elapsed_seconds=max(now.timestamp() - self.started_at, 0.0), explicit=explicit or None,
        )
        state = detector.DetectorState.model_validate(self.detector_state) if self.detector_state else None
        return detector.evaluate(signals, config, state, now=now, readiness=self._readiness())

    def _readiness(self) -> float | None:
        if not self.session_draft_id:
            return None
        paths = store.find_project_root(self._project_dir().resolve())
        if paths is None:
            return None
        try:
            return detector.readiness(store.HandoffStore(paths).load(self.session_draft_id))
        except Exception:  # noqa: BLE001
            return None

    def _decide(self, prompt_tokens: int | None) -> tuple[bool, str]:
        if self.explicit_request:
            return True, "explicit handoff request"
        tokens = prompt_tokens if isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool) \
            else self.last_prompt_tokens
        if tokens < 0 or (tokens == 0 and self.last_prompt_tokens == -1):
            return False, "awaiting real usage after compaction (-1 sentinel)"
        settings = self._settings()
        ceiling = self.effective_window().effective - settings.min_output_tokens
        if tokens >= ceiling:
            return True, f"prompt {tokens} leaves less than {settings.min_output_tokens} output tokens"
        trigger = None
        if settings.fallback_token_threshold is not None and tokens >= settings.fallback_token_threshold:
            trigger = f"prompt {tokens} >= fallback_token_threshold {settings.fallback_token_threshold}"
        elif tokens >= self.threshold_tokens:
            trigger = f"prompt {tokens} >= threshold {self.threshold_tokens}"
        else:
            result = self._evaluate_detector(tokens, explicit=False)
            if result is not None:
                self.last_detector = result.to_json_dict()
                if result.auto_prepare:
                    trigger = f"detector pressure {result.pressure:.2f} with readiness {result.readiness}"
        if trigger is None:
            return False, f"prompt {tokens} below threshold {self.threshold_tokens}"
        if self.post_compaction_tokens is not None:
            needed = max(self.threshold_tokens // GROWTH_SHARE, 1)
            growth = tokens - self.post_compaction_tokens
            if growth < needed:
                return False, f"cooldown: {growth} tokens of growth since the last compaction, needs {needed}"
        return True, trigger

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.should_compress_info(prompt_tokens)[0]

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str]:
        try:
            decision = self._decide(prompt_tokens)
        except Exception as exc:  # noqa: BLE001
            decision = (False, f"decision failed: {type(exc).__name__}")
        self.last_decision = decision[1]
        return decision

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """Never: while Baton is active the pre-flight number is an exact count, not a noisy estimate."""
        return False

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        live = [m for m in messages or [] if isinstance(m, dict) and m.get("role") != "system"
                and not is_baton_message(m)]
        return len(live) > 1

    def get_active_compression_failure_cooldown(self, **_: Any) -> dict[str, Any] | None:
        remaining = self.failure_until - time.time()
        if remaining <= 0:
            return None
        return {"remaining_seconds": remaining, "reason": self.degradation_reason or "compaction failure"}

    def request_handoff(self) -> None:
        """An explicit request: the next ``should_compress`` says yes, whatever the cooldown."""
        self.explicit_request = True

    # ---- the cycle -------------------------------------------------------------------------------

    def _fresh_tail_tokens(self) -> int:
        configured = self._settings().fresh_tail_tokens
        return configured if configured is not None else min(self.threshold_tokens // DEFAULT_TAIL_SHARE,
                                                             DEFAULT_TAIL_CAP)

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False, memory_context: str = "",
                 **_: Any) -> list[dict[str, Any]]:
        """One Baton handoff cycle; never raises, never returns an empty list."""
        try:
            return self._compress(messages, current_tokens, focus_topic, force)
        except Exception as exc:  # noqa: BLE001 - last line of defence; cycle.run_cycle already degrades
            LOGGER.warning("baton compress failed type=%s", type(exc).__name__)
            self.degradation_reason, self.degradation_detail = "internal_error", type(exc).__name__
            return list(messages or [])

    def _compress(self, messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None,
                  force: bool) -> list[dict[str, Any]]:
        runtime = get_runtime()
        settings = runtime.settings
        now = runtime.now()  # one reading: the detector state, the record's id and timestamps all use it
        before = runtime.count(messages)
        self.effective_window()
        tokens = before.tokens if before.tokens is not None else (current_tokens or 0)
        result = self._evaluate_detector(tokens, explicit=self.explicit_request or force, now=now)
        automation: dict[str, Any] = {"trigger": "pre_compaction", "score": None,
                                      "reasons": [f"Hermes compaction at {tokens} prompt tokens "
                                                  f"(threshold {self.threshold_tokens})"]}
        if result is not None:
            automation = result.to_automation("pre_compaction").model_dump(mode="json")
            automation["reasons"] = [*automation["reasons"], *[r for r in [self.last_decision] if r]]
            self.detector_state = result.new_state.to_json_dict() if result.recommend else self.detector_state
        window = self.threshold_tokens
        facts = cycle.SessionFacts(
            project_dir=self._project_dir(), session_id=self.session_id, model=self.model,
            adapter_version=self.adapter_version, objective=self.objective,
            session_draft_id=self.session_draft_id,
            previous_handoff_id=(self.last_handoff or {}).get("id"), automation=automation,
            brief_max_tokens=settings.brief_max_tokens, fresh_tail_tokens=self._fresh_tail_tokens(),
            degradation_keep_recent=settings.degradation_keep_recent,
            degradation_max_tokens=settings.degradation_max_tokens or max(window // DEFAULT_TAIL_SHARE, 1),
            now=now,
        )

        # Once the tokenizer failed, the cycle's further counts use the builders' rough fallbacks at once:
        # a hanging server must cost one timeout per compaction, not one per count.
        tokenizer_down = not before.exact and before.fallback_reason is not None

        def count_messages(batch: list[dict[str, Any]]) -> int:
            counted = runtime.count(batch) if not tokenizer_down else None
            if counted is None or counted.tokens is None:
                raise ValueError("uncountable")
            return counted.tokens

        def count_text(text: str) -> int:
            counted = runtime.count_text(text) if not tokenizer_down else None
            if counted is None or counted.tokens is None:
                raise ValueError("uncountable")
            return counted.tokens

        outcome = cycle.run_cycle(list(messages or []), facts, count_messages=count_messages,
                                  count_text=count_text, counter_source=runtime.source(),
                                  focus_topic=focus_topic, tokenizer_down=tokenizer_down)
        self._absorb(outcome)
        self.post_compaction_tokens = (runtime.count(outcome.messages).tokens if not tokenizer_down
                                       else estimate_chat_request({"messages": outcome.messages})
                                       + settings.fallback_margin_tokens)
        self.explicit_request = False
        return outcome.messages or list(messages or [])

    def _absorb(self, outcome: cycle.CycleOutcome) -> None:
        self.degradation_reason, self.degradation_detail = outcome.degraded, outcome.detail
        stored = outcome.handoff is not None and outcome.validation_status in ("pass", "warn")
        if stored:
            self.compression_count += 1
            self.last_handoff = outcome.handoff
            self.last_handoff_path = outcome.path
            self.last_validation_warnings = outcome.warnings
            self.session_draft_id = None
            self.staged_brief = None
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
        """A rotation at compaction keeps every bit of state; a new session loads the latest ready handoff."""
        try:
            rotation = kwargs.get("boundary_reason") == "compression" or (
                kwargs.get("old_session_id") is not None and kwargs.get("old_session_id") == self.session_id
                and self.session_id is not None)
            if kwargs.get("model"):
                self.model = str(kwargs["model"])
            if rotation:
                self.session_id = session_id or self.session_id
                self.session_rotations += 1
                self._remember_window()
                return
            self.session_id = session_id
            self._remember_window()
            self._reset_session_state()
            self._stage_latest_ready()
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton on_session_start failed type=%s", type(exc).__name__)

    def _reset_session_state(self) -> None:
        self.objective = None
        self.session_draft_id = None
        self.explicit_request = False
        self.turns = 0
        self.started_at = clock_now().timestamp()
        self.detector_state = {}
        self.post_compaction_tokens = None
        self.last_detector = None

    def _stage_latest_ready(self) -> None:
        paths = store.find_project_root(self._project_dir().resolve())
        if paths is None:
            return
        latest = store.HandoffStore(paths).latest("ready")
        if latest is None:
            return
        from baton_engine.handoff import freshness

        config = load_config(paths.data_dir)
        fresh = freshness.check_freshness(latest, paths.root, allowed_roots=config.policy.allowed_roots)
        runtime = get_runtime()

        def count_text(text: str) -> int:
            counted = runtime.count_text(text)
            if counted.tokens is None:
                raise ValueError("uncountable")
            return counted.tokens

        brief = render.render_brief(latest, freshness=fresh, max_tokens=runtime.settings.brief_max_tokens,
                                    count_tokens=count_text, counter_source=runtime.source())
        self.last_handoff = operations.summary_of(latest)
        self.staged_brief = brief.text
        self.staged_stale = fresh.stale

    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: per-session detector state and token counters; handoff lineage stays."""
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
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton on_session_end failed type=%s", type(exc).__name__)

    # ---- tools -----------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(schema) for schema in tools.SCHEMAS]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        messages = kwargs.get("messages")
        return tools.handle(self, name, args, messages if isinstance(messages, list) else None)

    def set_objective(self, text: str) -> None:
        self.objective = text

    def ensure_session_draft(self, messages: list[dict[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        """The session's working draft (created on first use) that baton_capture records into."""
        if self.session_draft_id:
            return self.session_draft_id, None
        messages = messages or []
        objective = self.objective or cycle.latest_user_request(messages)
        if not objective:
            return None, {"ok": False, "error": {
                "kind": "input_error",
                "message": "no objective yet: record one first with baton_capture kind=objective"}}
        payload = {
            "title": "Hermes session: " + cycle._one_line(objective.splitlines()[0], cycle.TITLE_CHARS),
            "objective": objective[: cycle.OBJECTIVE_CHARS],
            "summary": {"current_state": cycle.current_state(messages)},
        }
        origin = {"harness": "generic", "adapter_version": self.adapter_version, "session_id": self.session_id,
                  "model": self.model, "actor": {"type": "agent", "name": "hermes"}}
        continued = self._continue_previous(payload, origin)
        if continued is not None:
            self.session_draft_id = continued
            return continued, None
        result, _code = operations.call(operations.checkpoint_create, self._project_dir(), payload, origin=origin)
        if not result.get("ok"):
            return None, result
        self.session_draft_id = result["handoff"]["id"]
        return self.session_draft_id, None

    def _continue_previous(self, payload: dict[str, Any], origin: dict[str, Any]) -> str | None:
        """A draft continuing the previous handoff (inherits its items, so nothing recorded is forgotten)."""
        previous_id = (self.last_handoff or {}).get("id")
        paths = store.find_project_root(self._project_dir().resolve())
        if not previous_id or paths is None:
            return None
        try:
            handoffs = store.HandoffStore(paths)
            changes = {
                "work": {"title": payload["title"], "objective": payload["objective"]},
                "summary": payload["summary"],
                "origin": {**origin, "session_id": capture.hash_session_id(origin["session_id"])},
            }
            draft = capture.redacted(lineage.continue_from(handoffs.load(previous_id), changes=changes))
            handoffs.save(draft)
        except (BatonError, OSError) as exc:
            LOGGER.warning("baton could not continue the previous handoff type=%s", type(exc).__name__)
            return None
        return draft.id

    # ---- status ----------------------------------------------------------------------------------

    def get_status(self) -> dict[str, Any]:
        status = super().get_status()
        try:
            runtime = get_runtime()
            counter = runtime.counter()
            stats = counter.stats() if counter is not None else None
            remaining = self.get_active_compression_failure_cooldown()
            window = self.effective_window()
            detector_view = self.last_detector or {}
            from baton_engine.hermes.plugin import activation

            current = activation()
            patches = current.patches if current is not None else []
            status.update({
                "engine": ENGINE_NAME,
                "active": True,
                "exact_estimators": {
                    "installed": [f"{p.module}.{p.attr}" for p in patches if p.installed],
                    "skipped": [p.skipped for p in patches if p.skipped],
                },
                "latest_handoff": self.last_handoff,
                "latest_handoff_path": self.last_handoff_path,
                "validation_warnings": list(self.last_validation_warnings),
                "staged_brief": self.staged_brief is not None,
                "stale": self.staged_stale,
                "window": window.to_status(),
                "tokenizer": {"source": runtime.source(), "exact": runtime.last_chat_exact,
                              "fallbacks": stats.fallbacks if stats else 0,
                              "last_fallback_reason": (stats.last_fallback_reason if stats else None)
                              or runtime.counter_error},
                "detector": {"pressure": detector_view.get("pressure"), "readiness": detector_view.get("readiness"),
                             "reasons": detector_view.get("reasons", [])},
                "last_decision": self.last_decision,
                "cooldown": {"post_compaction_tokens": self.post_compaction_tokens,
                             "growth_needed": max(self.threshold_tokens // GROWTH_SHARE, 1),
                             "failure_remaining_seconds": int(remaining["remaining_seconds"]) if remaining else 0},
                "degradation": {"reason": self.degradation_reason, "detail": self.degradation_detail,
                                "count": self.degraded_count},
                "session_rotations": self.session_rotations,
                "output_clamps": runtime.clamps,
            })
        except Exception as exc:  # noqa: BLE001
            status["status_error"] = type(exc).__name__
        return status
