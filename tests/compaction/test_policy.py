"""The compaction policy, pure: trigger, ceiling, anti-thrash and the stuck rule on full-request sizes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from baton_engine.policy import Limits, PolicyState, after_compaction, decide

LIMITS = Limits(threshold=48_000, window=64_000, min_output_tokens=4_096, fallback_threshold=12_000)


def test_the_lower_of_threshold_and_fallback_threshold_triggers() -> None:
    assert LIMITS.trigger == 12_000 and LIMITS.growth_needed == 1_200 and LIMITS.ceiling == 59_904
    assert decide(11_999, LIMITS, PolicyState()) == (False, "request 11999 below trigger 12000")
    assert decide(12_000, LIMITS, PolicyState())[0]
    assert Limits(threshold=48_000, window=64_000, min_output_tokens=4_096).trigger == 48_000


def test_detector_is_asked_only_below_the_trigger() -> None:
    asked: list[int] = []

    def detector() -> str | None:
        asked.append(1)
        return "detector pressure 0.90"

    assert decide(5_000, LIMITS, PolicyState(), detector=detector) == (True, "detector pressure 0.90")
    assert decide(13_000, LIMITS, PolicyState(), detector=detector)[0] and len(asked) == 1


def test_stuck_compaction_waits_for_growth_and_says_why() -> None:
    state = after_compaction(PolicyState(explicit=True), 15_000, LIMITS)
    assert state.explicit is False and state.stuck and "15000" in state.stuck
    compact, why = decide(15_500, LIMITS, state)
    assert not compact and "cooldown" in why and "still at or above the trigger" in why
    assert decide(16_200, LIMITS, state)[0]
    assert after_compaction(PolicyState(), 8_000, LIMITS).stuck is None


def test_ceiling_bypasses_the_cooldown_unless_the_last_compaction_ended_above_it() -> None:
    below = after_compaction(PolicyState(), 59_000, LIMITS)
    assert decide(59_904, LIMITS, below) == (True, "request 59904 leaves less than 4096 output tokens")
    above = after_compaction(PolicyState(), 60_000, LIMITS)
    assert decide(60_500, LIMITS, above)[0] is False  # compacting again would loop at every check
    assert decide(61_200, LIMITS, above)[0] is True


def test_awaiting_usage_and_negative_sizes_never_compact() -> None:
    assert decide(-1, LIMITS, PolicyState()) == (False, "awaiting real usage after compaction")
    assert decide(0, LIMITS, PolicyState(), awaiting_usage=True)[0] is False
    assert decide(None, LIMITS, PolicyState())[0] is False
    assert decide(-1, LIMITS, PolicyState(explicit=True)) == (True, "explicit handoff request")


@given(st.integers(1, 200_000), st.integers(0, 200_000), st.integers(0, 50_000))
def test_never_compacts_twice_without_growth_below_the_ceiling(trigger: int, post: int, grown: int) -> None:
    limits = Limits(threshold=trigger, window=trigger * 2 + 8_192, min_output_tokens=4_096)
    state = after_compaction(PolicyState(), post, limits)
    tokens = post + grown
    compact, _ = decide(tokens, limits, state)
    if compact and tokens < limits.ceiling:
        assert grown >= limits.growth_needed and tokens >= limits.trigger
    assert (state.stuck is not None) == (post >= limits.trigger)
