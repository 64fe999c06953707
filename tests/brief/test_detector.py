"""Detector tables: normalisation, every formula branch, thresholds, cooldown, readiness, config overrides."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from brief.records import full_data, minimal_data, record

from baton_engine.errors import UserInputError
from baton_engine.handoff.config import DetectorConfig, parse_config
from baton_engine.handoff.detector import (
    INPUT_NAMES,
    DetectorSignals,
    DetectorState,
    evaluate,
    normalise,
    readiness,
)
from baton_engine.handoff.model import Automation, HandoffRecord

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
DEFAULT = DetectorConfig()


def signals(**kwargs: Any) -> DetectorSignals:
    return DetectorSignals(**kwargs)


# (case id, signals, expected pressure, expected used inputs)
PRESSURE_TABLE = [
    ("nothing known", {}, 0.0, {}),
    ("explicit false is known, not unused", {"explicit": False}, 0.0, {"explicit": 0.0}),
    ("explicit wins", {"explicit": True, "context_tokens": 10, "context_window": 100}, 1.0,
     {"explicit": 1.0, "context": 0.1}),
    ("context only", {"context_tokens": 830, "context_window": 1000}, 0.581, {"context": 0.83}),
    ("context clamps at 1", {"context_tokens": 5000, "context_window": 1000}, 0.70, {"context": 1.0}),
    ("progress term sums", {"context_tokens": 900, "context_window": 1000, "turns": 20, "elapsed_seconds": 2700,
                            "uncommitted_changes": True},
     0.70 * 0.9 + 0.15 * 0.5 + 0.10 * 0.5 + 0.05 * 1.0,
     {"context": 0.9, "turn": 0.5, "elapsed": 0.5, "change": 1.0}),
    ("boundary term wins", {"stuck_fingerprints": ["pytest:E1"] * 3, "work_boundary": True, "head_moved": True},
     1.0, {"change": 1.0, "stuck": 1.0, "work_boundary": 1.0}),
    ("stuck twice is half", {"stuck_fingerprints": ["a", "b", "a"]}, 0.30, {"stuck": 0.5}),
    ("stuck once is nothing", {"stuck_fingerprints": ["a", "b", "c"]}, 0.0, {"stuck": 0.0}),
    ("no failures observed", {"stuck_fingerprints": []}, 0.0, {"stuck": 0.0}),
    ("work boundary strength", {"work_boundary": 0.4}, 0.10, {"work_boundary": 0.4}),
    ("change known false", {"uncommitted_changes": False}, 0.0, {"change": 0.0}),
    ("change: one true of mixed", {"uncommitted_changes": False, "head_moved": True}, 0.15, {"change": 1.0}),
    ("turns and elapsed clamp", {"turns": 400, "elapsed_seconds": 99999.0}, 0.25, {"turn": 1.0, "elapsed": 1.0}),
    ("tokens without window unused", {"context_tokens": 900}, 0.0, {}),
]


@pytest.mark.parametrize(("case", "given", "pressure", "used"), PRESSURE_TABLE, ids=[row[0] for row in PRESSURE_TABLE])
def test_pressure_table(case: str, given: dict[str, Any], pressure: float, used: dict[str, float]) -> None:
    result = evaluate(signals(**given), DEFAULT, now=NOW)
    assert result.pressure == pytest.approx(pressure, abs=1e-9)
    assert result.inputs_used == pytest.approx(used)
    assert set(result.inputs_unused) == set(INPUT_NAMES) - set(used)
    assert result.recommend == (pressure >= 0.70 or bool(given.get("explicit")))


def test_unused_inputs_are_not_renormalised() -> None:
    """Only context known at 100%: pressure stays at its weight (0.70), it is not scaled up to 1."""
    result = evaluate(signals(context_tokens=1000, context_window=1000), DEFAULT, now=NOW)
    assert result.pressure == pytest.approx(0.70)
    assert result.inputs_unused == ("explicit", "turn", "elapsed", "change", "stuck", "work_boundary")
    assert any(r.startswith("not available (unused, weight not redistributed): explicit, turn") for r in result.reasons)


def test_reasons_are_short_human_strings() -> None:
    result = evaluate(signals(context_tokens=700, context_window=1000, turns=12,
                              stuck_fingerprints=["x", "x", "x"]), DEFAULT, now=NOW)
    assert result.reasons[0] == "pressure 0.60 from the boundary term"
    assert "context 70% of window (700/1000 tokens, weight 0.70)" in result.reasons
    assert "12 turns of soft budget 40 (weight 0.15)" in result.reasons
    assert "same failing action repeated 3 times (weight 0.60)" in result.reasons


# (case, pressure-producing signals, threshold overrides, recommend, auto_prepare, readiness)
THRESHOLD_TABLE = [
    ("at recommend threshold", {"context_tokens": 1000, "context_window": 1000}, {}, True, False, 1.0),
    ("just below recommend", {"context_tokens": 999, "context_window": 1000}, {}, False, False, 1.0),
    ("at auto threshold, readiness at min", {"context_tokens": 1, "context_window": 1}, {"auto_prepare_threshold": 0.70},
     True, True, 0.80),
    ("auto threshold met, readiness below", {"explicit": True}, {}, True, False, 0.7999),
    ("auto threshold met, no record", {"explicit": True}, {}, True, False, None),
    ("auto threshold not met", {"context_tokens": 1, "context_window": 1}, {}, True, False, 1.0),
    ("exact float boundary", {"context_tokens": 1, "context_window": 1, "turns": 40}, {"auto_prepare_threshold": 0.85},
     True, True, 0.8),
]


@pytest.mark.parametrize(("case", "given", "overrides", "recommend", "auto", "ready"), THRESHOLD_TABLE,
                         ids=[row[0] for row in THRESHOLD_TABLE])
def test_threshold_table(case: str, given: dict[str, Any], overrides: dict[str, Any], recommend: bool, auto: bool,
                         ready: float | None) -> None:
    config = DetectorConfig(**overrides)
    result = evaluate(signals(**given), config, now=NOW, readiness=ready)
    assert (result.recommend, result.auto_prepare) == (recommend, auto)


def test_auto_prepare_reasons_explain_why_not() -> None:
    no_record = evaluate(signals(explicit=True), DEFAULT, now=NOW)
    assert "no handoff record yet: auto-prepare needs a capture first" in no_record.reasons
    low = evaluate(signals(explicit=True), DEFAULT, now=NOW, readiness=0.5)
    assert "readiness 0.50 below 0.80: not auto-prepared" in low.reasons


HIGH = {"context_tokens": 1000, "context_window": 1000, "turns": 40}  # pressure 0.85


def _state(minutes_ago: float, pressure: float) -> DetectorState:
    return DetectorState(last_recommended_at=(NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                         last_pressure=pressure)


# (case, signals, state, suppressed, remaining seconds)
COOLDOWN_TABLE = [
    ("no previous recommendation", HIGH, None, False, 0),
    ("repeat within cooldown", HIGH, _state(5, 0.85), True, 15 * 60),
    ("small rise within cooldown", HIGH, _state(5, 0.71), True, 15 * 60),
    ("material rise exactly at 0.15", HIGH, _state(5, 0.70), False, 0),
    ("cooldown just ended", HIGH, _state(20, 0.85), False, 0),
    ("explicit always wins", {"explicit": True}, _state(1, 1.0), False, 0),
]


@pytest.mark.parametrize(("case", "given", "state", "suppressed", "remaining"), COOLDOWN_TABLE,
                         ids=[row[0] for row in COOLDOWN_TABLE])
def test_cooldown_table(case: str, given: dict[str, Any], state: DetectorState | None, suppressed: bool,
                        remaining: int) -> None:
    result = evaluate(signals(**given), DEFAULT, state, now=NOW, readiness=1.0)
    assert result.suppressed_by_cooldown is suppressed
    assert result.cooldown_remaining_seconds == remaining
    assert result.recommend is not suppressed
    if suppressed:
        assert not result.auto_prepare
        assert result.new_state == state
        assert any(r.startswith("repeat suppressed: recommended 5 min ago") for r in result.reasons)
    else:
        assert result.new_state.last_recommended_at == "2026-11-30T12:00:00Z"
        assert result.new_state.last_pressure == round(result.pressure, 4)


def test_no_recommendation_keeps_state() -> None:
    state = _state(3, 0.9)
    assert evaluate(signals(turns=1), DEFAULT, state, now=NOW).new_state is state


def test_state_round_trips_through_json() -> None:
    result = evaluate(signals(**HIGH), DEFAULT, now=NOW)
    stored = json.loads(json.dumps(result.new_state.to_json_dict()))
    again = evaluate(signals(**HIGH), DEFAULT, DetectorState.from_json_dict(stored), now=NOW + timedelta(minutes=1))
    assert again.suppressed_by_cooldown and again.cooldown_remaining_seconds == 19 * 60


@pytest.mark.parametrize("bad", [{"last_recommended_at": "yesterday"}, {"last_pressure": 3}, [1, 2]])
def test_unreadable_state_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(UserInputError, match="detector.json: unreadable detector state; delete it"):
        DetectorState.from_json_dict(bad, source="detector.json")


def test_config_overrides_change_weights_and_thresholds() -> None:
    config = parse_config(
        {"detector": {"weights": {"context": 1.0, "explicit": 0.5}, "recommend_threshold": 0.9,
                      "soft_turn_budget": 10, "soft_duration_minutes": 1, "cooldown_minutes": 0}}
    ).detector
    result = evaluate(signals(context_tokens=95, context_window=100, turns=5, elapsed_seconds=30.0), config, now=NOW)
    assert result.inputs_used == pytest.approx({"context": 0.95, "turn": 0.5, "elapsed": 0.5})
    assert result.pressure == pytest.approx(min(1.0, 0.95 + 0.15 * 0.5 + 0.10 * 0.5))
    assert result.recommend
    explicit = evaluate(signals(explicit=True), config, now=NOW)
    assert explicit.pressure == pytest.approx(0.5) and explicit.recommend  # explicit recommends whatever its weight
    cooled = evaluate(signals(context_tokens=95, context_window=100), config, _state(1, 0.9), now=NOW)
    assert not cooled.suppressed_by_cooldown  # cooldown_minutes 0 disables suppression


def test_to_automation_is_auditable() -> None:
    result = evaluate(signals(context_tokens=900, context_window=1000, turns=40, uncommitted_changes=True),
                      DEFAULT, now=NOW, readiness=0.9)
    automation = result.to_automation("threshold")
    assert isinstance(automation, Automation)
    dumped = automation.model_dump(mode="json")
    assert dumped["trigger"] == "threshold" and dumped["score"] == round(result.pressure, 4) == 0.83
    assert dumped["inputs_used"] == {"context": 0.9, "turn": 1.0, "change": 1.0}
    assert dumped["inputs_unused"] == ["explicit", "elapsed", "stuck", "work_boundary"]
    assert dumped["reasons"] == list(result.reasons)
    assert json.loads(json.dumps(result.to_json_dict()))["terms"]["progress"] == 0.83


def test_evaluate_is_pure() -> None:
    given = signals(**HIGH, stuck_fingerprints=["a", "a"])
    state = _state(30, 0.5)
    assert evaluate(given, DEFAULT, state, now=NOW) == evaluate(given, DEFAULT, state, now=NOW)


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"turns": "3"}, "turns: Input should be a valid integer"),
        ({"context_window": 0}, "context_window: Input should be greater than 0"),
        ({"work_boundary": 1.5}, "work_boundary"),
        ({"tokens": 5}, "tokens: Extra inputs are not permitted"),
        ("not an object", "expected a JSON object"),
    ],
)
def test_bad_event_is_a_clear_error(event: Any, message: str) -> None:
    with pytest.raises(UserInputError, match=message) as info:
        DetectorSignals.from_mapping(event, source="--event")
    assert str(info.value).startswith("--event:")


def test_event_from_json() -> None:
    parsed = DetectorSignals.from_mapping(json.loads('{"turns": 3, "elapsed_seconds": 60, "stuck_fingerprints": ["a"]}'))
    assert normalise(parsed, DEFAULT)["elapsed"] == pytest.approx(60 / 5400)
    assert parsed.stuck_fingerprints == ("a",)


# (case, record mutation, validation status, expected readiness)
def _no_actions(data: dict[str, Any]) -> None:
    data["open_items"] = [{"id": "O-001", "description": "think"}]
    data["validation"]["checks"] = []


def _action_without_check(data: dict[str, Any]) -> None:
    data["open_items"] = [{"id": "O-001", "description": "d", "suggested_action": "do it"}]
    data["validation"]["checks"] = []


READINESS_TABLE = [
    ("validated and actionable", lambda d: None, "pass", 1.0),
    ("warned", lambda d: None, "warn", 0.8),
    ("failed", lambda d: None, "fail", 0.6),
    ("not validated", lambda d: None, "not_run", 0.6),
    ("no actionable item", _no_actions, "pass", 0.7),
    ("action without acceptance check", _action_without_check, "pass", 0.85),
]


@pytest.mark.parametrize(("case", "mutate", "status", "expected"), READINESS_TABLE, ids=[r[0] for r in READINESS_TABLE])
def test_readiness_table(case: str, mutate: Any, status: str, expected: float) -> None:
    data = full_data()
    data["validation"]["status"] = status
    mutate(data)
    assert readiness(record(data)) == pytest.approx(expected)


def test_readiness_prefers_the_fresh_report_and_none_without_record() -> None:
    class Report:
        status = "fail"
        checks: list[Any] = []

    rec: HandoffRecord = record(full_data())
    assert readiness(rec, Report()) == pytest.approx(0.6)
    assert readiness(None) is None
    minimal = record(minimal_data())
    assert readiness(minimal) == pytest.approx(0.3)


def test_naive_now_is_refused() -> None:
    with pytest.raises(UserInputError, match="no timezone"):
        evaluate(signals(turns=1), DEFAULT, now=datetime(2026, 1, 1))
