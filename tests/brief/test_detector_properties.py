"""Detector properties: the score stays in 0..1, and learning a signal never lowers it (no renormalisation)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from baton_engine.handoff.config import DetectorConfig
from baton_engine.handoff.detector import DetectorSignals, evaluate

NOW = datetime(2026, 11, 30, tzinfo=UTC)

values: dict[str, Any] = {
    "context_tokens": st.integers(0, 400_000),
    "turns": st.integers(0, 500),
    "elapsed_seconds": st.floats(0, 1e6, allow_nan=False),
    "uncommitted_changes": st.booleans(),
    "head_moved": st.booleans(),
    "stuck_fingerprints": st.lists(st.sampled_from(["a", "b", "c"]), max_size=6).map(tuple),
    "work_boundary": st.one_of(st.booleans(), st.floats(0, 1)),
    "explicit": st.booleans(),
}
signal_sets = st.fixed_dictionaries({}, optional=values).map(lambda d: {**d, "context_window": 128_000})
weights = st.fixed_dictionaries(
    {name: st.floats(0, 2) for name in ("explicit", "context", "turn", "elapsed", "change", "stuck",
                                         "work_boundary", "boundary_change")}
)


@given(given_signals=signal_sets, extra=st.sampled_from(sorted(values)), data=st.data(), w=weights)
def test_learning_a_signal_never_lowers_pressure(given_signals: dict[str, Any], extra: str, data: st.DataObject,
                                                 w: dict[str, float]) -> None:
    config = DetectorConfig.model_validate({"weights": w})
    before = evaluate(DetectorSignals(**{k: v for k, v in given_signals.items() if k != extra}), config, now=NOW)
    value = data.draw(values[extra])
    after = evaluate(DetectorSignals(**{**given_signals, extra: value}), config, now=NOW)
    assert 0.0 <= before.pressure <= 1.0 and 0.0 <= after.pressure <= 1.0
    assert after.pressure >= before.pressure
    assert set(after.inputs_unused) <= set(before.inputs_unused)
