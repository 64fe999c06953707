"""Handoff pressure and readiness: when should the agent hand off, and is a handoff ready to prepare?

The spec's formula, with every weight and threshold from ``DetectorConfig``::

    pressure = max(w.explicit * explicit,
                   w.context * context + w.turn * turn + w.elapsed * elapsed + w.change * change,
                   w.stuck * stuck + w.work_boundary * work_boundary + w.boundary_change * change)

Inputs are normalised to 0..1 (ratios are clamped at 1):

- context = context_tokens / context_window; turn = turns / soft_turn_budget;
  elapsed = elapsed_seconds / (soft_duration_minutes * 60);
- change = 1 if uncommitted changes exist or the head moved since the last checkpoint, 0 if every
  known one of the two says no (either may be unknown);
- stuck = from the recent failing action fingerprints: the most repeated one seen >= 3 times -> 1.0,
  twice -> 0.5, else 0 (``STUCK_LEVELS``);
- work_boundary: a bool or a 0..1 strength; explicit: a bool.

An unavailable input (None) is listed in ``inputs_unused`` and contributes nothing. Its weight is NOT
renormalised onto the others: a missing signal must never make the known ones look more urgent,
so with fewer inputs the score can only be lower, never guessed higher.

``recommend = pressure >= recommend_threshold`` (an explicit request always recommends, whatever
its weight); ``auto_prepare = recommend and pressure >= auto_prepare_threshold and readiness >=
auto_prepare_min_readiness`` (no record -> readiness None -> never auto-prepare). Cooldown: a
recommendation within ``cooldown_minutes`` of the previous one is suppressed unless pressure rose by
at least ``material_rise`` since then; an explicit request is never suppressed. Pressure is rounded
to 9 decimals before comparing so that thresholds hold exactly at the boundary.

Pure: ``now`` is a parameter; the state is a small JSON object the caller persists
(``.baton/cache/detector.json``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from baton_engine.errors import UserInputError
from baton_engine.handoff.config import DetectorConfig
from baton_engine.handoff.ids import format_timestamp, parse_timestamp
from baton_engine.handoff.model import Automation, HandoffRecord, Trigger

INPUT_NAMES = ("explicit", "context", "turn", "elapsed", "change", "stuck", "work_boundary")
# Repeats of one failing action fingerprint -> stuck signal (highest matching level wins).
STUCK_LEVELS = ((3, 1.0), (2, 0.5))
COMPARE_DIGITS = 9

# Readiness: share of each component; validation status -> component score.
READINESS_WEIGHTS = {"required": 0.30, "validation": 0.40, "actionable": 0.30}
VALIDATION_SCORES = {"pass": 1.0, "warn": 0.5, "fail": 0.0, "not_run": 0.0}


class DetectorSignals(BaseModel):
    """Raw observations from the agent loop or a ``detect --event`` payload; any may be None."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    context_tokens: int | None = Field(default=None, ge=0)
    context_window: int | None = Field(default=None, gt=0)
    turns: int | None = Field(default=None, ge=0)
    elapsed_seconds: float | None = Field(default=None, ge=0)
    uncommitted_changes: bool | None = None
    head_moved: bool | None = None
    stuck_fingerprints: tuple[str, ...] | None = None
    work_boundary: bool | float | None = None
    explicit: bool | None = None

    @field_validator("stuck_fingerprints", mode="before")
    @classmethod
    def _list_to_tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("work_boundary")
    @classmethod
    def _unit_interval(cls, value: bool | float | None) -> bool | float | None:
        if isinstance(value, float) and not 0.0 <= value <= 1.0:
            raise ValueError("must be a bool or a number between 0 and 1")
        return value

    @classmethod
    def from_mapping(cls, data: Any, *, source: str = "event") -> DetectorSignals:
        """Parse an event object (e.g. ``baton detect --event JSON``); errors name every bad key."""
        if not isinstance(data, Mapping):
            raise UserInputError(f"{source}: expected a JSON object of detector signals, got {type(data).__name__}")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                for err in exc.errors(include_input=False)
            )
            raise UserInputError(
                f"{source}: invalid detector signal(s): {problems}. Known keys: {', '.join(cls.model_fields)}"
            ) from None


class DetectorState(BaseModel):
    """What the detector remembers between calls: the last recommendation (time and pressure)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    last_recommended_at: str | None = None
    last_pressure: float | None = Field(default=None, ge=0, le=1)

    @classmethod
    def from_json_dict(cls, data: Any, *, source: str = "detector state") -> DetectorState:
        """Read persisted state; unusable state is an input error naming the source (callers may reset it)."""
        if data is None:
            return cls()
        try:
            state = cls.model_validate(data)
            if state.last_recommended_at is not None:
                parse_timestamp(state.last_recommended_at)
        except (ValidationError, UserInputError):
            raise UserInputError(
                f"{source}: unreadable detector state; delete it to start without a cooldown"
            ) from None
        return state

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class DetectorResult:
    """One evaluation: the score, the decision, and everything needed to audit it."""

    pressure: float
    recommend: bool
    auto_prepare: bool
    readiness: float | None
    inputs_used: dict[str, float]
    inputs_unused: tuple[str, ...]
    terms: dict[str, float]
    reasons: tuple[str, ...]
    suppressed_by_cooldown: bool
    cooldown_remaining_seconds: int
    new_state: DetectorState = field(default_factory=DetectorState)

    def to_automation(self, trigger: Trigger) -> Automation:
        """The record's ``automation`` block; inputs used/unused kept as extra fields for audit."""
        return Automation.model_validate(
            {
                "trigger": trigger,
                "score": round(self.pressure, 4),
                "reasons": list(self.reasons),
                "inputs_used": dict(self.inputs_used),
                "inputs_unused": list(self.inputs_unused),
            }
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "pressure": round(self.pressure, 4),
            "recommend": self.recommend,
            "auto_prepare": self.auto_prepare,
            "readiness": None if self.readiness is None else round(self.readiness, 4),
            "inputs_used": dict(self.inputs_used),
            "inputs_unused": list(self.inputs_unused),
            "terms": dict(self.terms),
            "reasons": list(self.reasons),
            "suppressed_by_cooldown": self.suppressed_by_cooldown,
            "cooldown_remaining_seconds": self.cooldown_remaining_seconds,
            "state": self.new_state.to_json_dict(),
        }


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return min(numerator / denominator, 1.0)


def _change(signals: DetectorSignals) -> float | None:
    known = [v for v in (signals.uncommitted_changes, signals.head_moved) if v is not None]
    return None if not known else float(any(known))


def stuck_level(fingerprints: Sequence[str] | None) -> tuple[float | None, int]:
    """(stuck signal, repeats of the most repeated failing fingerprint); None when not observed."""
    if fingerprints is None:
        return None, 0
    repeats = max(Counter(fingerprints).values(), default=0)
    level = next((value for count, value in STUCK_LEVELS if repeats >= count), 0.0)
    return level, repeats


def normalise(signals: DetectorSignals, config: DetectorConfig) -> dict[str, float | None]:
    """Every input in 0..1, or None when the signal was not available."""
    wb = signals.work_boundary
    return {
        "explicit": None if signals.explicit is None else float(signals.explicit),
        "context": _ratio(signals.context_tokens, signals.context_window),
        "turn": _ratio(signals.turns, config.soft_turn_budget),
        "elapsed": _ratio(signals.elapsed_seconds, config.soft_duration_minutes * 60),
        "change": _change(signals),
        "stuck": stuck_level(signals.stuck_fingerprints)[0],
        "work_boundary": None if wb is None else float(wb),
    }


def _reasons(
    signals: DetectorSignals, inputs: Mapping[str, float | None], config: DetectorConfig
) -> list[str]:
    w = config.weights
    out: list[str] = []
    if inputs["explicit"]:
        out.append(f"explicit handoff request (weight {w.explicit:.2f})")
    if inputs["context"] is not None:
        out.append(
            f"context {inputs['context']:.0%} of window "
            f"({signals.context_tokens}/{signals.context_window} tokens, weight {w.context:.2f})"
        )
    if inputs["turn"] is not None:
        out.append(f"{signals.turns} turns of soft budget {config.soft_turn_budget} (weight {w.turn:.2f})")
    if inputs["elapsed"] is not None:
        minutes = (signals.elapsed_seconds or 0) / 60
        out.append(
            f"{minutes:.0f} min elapsed of soft {config.soft_duration_minutes:g} min (weight {w.elapsed:.2f})"
        )
    if inputs["change"]:
        what = [n for n, v in (("uncommitted changes", signals.uncommitted_changes),
                               ("head moved", signals.head_moved)) if v]
        out.append(f"{' and '.join(what)} since last checkpoint (weight {w.change:.2f}/{w.boundary_change:.2f})")
    if inputs["stuck"]:
        repeats = stuck_level(signals.stuck_fingerprints)[1]
        out.append(f"same failing action repeated {repeats} times (weight {w.stuck:.2f})")
    if inputs["work_boundary"]:
        out.append(f"work boundary reached (weight {w.work_boundary:.2f})")
    return out


def evaluate(
    signals: DetectorSignals,
    config: DetectorConfig,
    state: DetectorState | None = None,
    *,
    now: datetime,
    readiness: float | None = None,
) -> DetectorResult:
    """Score the signals, apply thresholds and the cooldown, and return the next state."""
    if now.tzinfo is None:
        raise UserInputError("detector: `now` has no timezone; pass an aware datetime (UTC)")
    state = state or DetectorState()
    inputs = normalise(signals, config)
    v = {name: value or 0.0 for name, value in inputs.items()}
    w = config.weights
    terms = {
        "explicit": w.explicit * v["explicit"],
        "progress": w.context * v["context"] + w.turn * v["turn"] + w.elapsed * v["elapsed"] + w.change * v["change"],
        "boundary": w.stuck * v["stuck"] + w.work_boundary * v["work_boundary"] + w.boundary_change * v["change"],
    }
    terms = {name: round(value, COMPARE_DIGITS) for name, value in terms.items()}
    pressure = min(max(terms.values()), 1.0)
    explicit = bool(signals.explicit)
    winner = max(terms, key=lambda name: terms[name])  # ties: first in formula order
    reasons = [f"pressure {pressure:.2f} from the {winner} term", *_reasons(signals, inputs, config)]
    unused = tuple(name for name in INPUT_NAMES if inputs[name] is None)
    if unused:
        reasons.append(f"not available (unused, weight not redistributed): {', '.join(unused)}")
    wanted = explicit or pressure >= config.recommend_threshold

    suppressed, remaining = False, 0
    if wanted and not explicit and state.last_recommended_at is not None:
        since = (now - parse_timestamp(state.last_recommended_at)).total_seconds()
        window = config.cooldown_minutes * 60
        rise = round(pressure - (state.last_pressure or 0.0), COMPARE_DIGITS)
        if 0 <= since < window and rise < config.material_rise:
            suppressed, remaining = True, math.ceil(window - since)
            reasons.append(
                f"repeat suppressed: recommended {since / 60:.0f} min ago at pressure "
                f"{state.last_pressure or 0.0:.2f}, cooldown {config.cooldown_minutes:g} min, "
                f"needs a rise of {config.material_rise:.2f}"
            )
    recommend = wanted and not suppressed
    auto_prepare = (
        recommend
        and pressure >= config.auto_prepare_threshold
        and readiness is not None
        and round(readiness, COMPARE_DIGITS) >= config.auto_prepare_min_readiness
    )
    if recommend and pressure >= config.auto_prepare_threshold:
        if readiness is None:
            reasons.append("no handoff record yet: auto-prepare needs a capture first")
        elif not auto_prepare:
            minimum = config.auto_prepare_min_readiness
            reasons.append(f"readiness {readiness:.2f} below {minimum:.2f}: not auto-prepared")
    new_state = (
        DetectorState(last_recommended_at=format_timestamp(now), last_pressure=round(pressure, 4))
        if recommend
        else state
    )
    return DetectorResult(
        pressure=pressure,
        recommend=recommend,
        auto_prepare=auto_prepare,
        readiness=readiness,
        inputs_used={name: round(value, 4) for name, value in inputs.items() if value is not None},
        inputs_unused=unused,
        terms={name: round(value, 4) for name, value in terms.items()},
        reasons=tuple(reasons),
        suppressed_by_cooldown=suppressed,
        cooldown_remaining_seconds=remaining,
        new_state=new_state,
    )


def _actionable(record: HandoffRecord, validation_report: Any | None) -> float:
    """1 for an open item with a suggested action and an acceptance check (or a passed actionability
    check, e.g. definition of done met), 0.5 for a suggested action without a check, else 0."""
    items = [i for i in record.open_items if i.suggested_action and i.suggested_action.strip()]
    if any(i.acceptance_check and i.acceptance_check.strip() for i in items):
        return 1.0
    checks = getattr(validation_report, "checks", None) or record.validation.checks
    if any(c.name == "actionability" and c.status == "pass" for c in checks):
        return 1.0
    return 0.5 if items else 0.0


def readiness(record: HandoffRecord | None, validation_report: Any | None = None) -> float | None:
    """How ready ``record`` is to be handed off, 0..1; None when there is no record.

    Components (``READINESS_WEIGHTS``): required text fields non-blank (title, objective, current
    state); validation status (the report's, else the record's stored one; pass 1, warn 0.5, else 0);
    an actionable next item. Defaults: a passed record with an actionable item scores 1.0, a warned
    one 0.8, an unvalidated one at most 0.6, so it is never auto-prepared on the default 0.80.
    """
    if record is None:
        return None
    required = (record.work.title, record.work.objective, record.summary.current_state)
    required_score = sum(1 for text in required if text.strip()) / len(required)
    status = getattr(validation_report, "status", None) or record.validation.status
    score = (
        READINESS_WEIGHTS["required"] * required_score
        + READINESS_WEIGHTS["validation"] * VALIDATION_SCORES.get(status, 0.0)
        + READINESS_WEIGHTS["actionable"] * _actionable(record, validation_report)
    )
    return round(score, 4)
