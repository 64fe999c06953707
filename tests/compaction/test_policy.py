"""The compaction policy, pure: trigger, ceiling, anti-thrash and the stuck rule on full-request sizes."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from baton_engine import budget
from baton_engine.policy import (
    DEFAULT_TAIL_CAP,
    DEFAULT_TAIL_SHARE,
    MIN_TAIL_TOKENS,
    MIN_CAP_TOKENS,
    MIN_UNANSWERED_TOKENS,
    POST_COMPACTION_ROOM_TOKENS,
    Limits,
    PolicyState,
    after_compaction,
    degraded_tail_tokens,
    reserved_tokens,
    tail_budgets,
    trigger_floor,
)
from baton_engine.tokens.contract import TokenCount

def decide(tokens: int | None, limits: Limits, state: PolicyState, **kwargs: object) -> tuple[bool, str]:
    """``budget.decide``'s compaction answer (the host asks with a full-request size) as ``(compact?, reason)``."""
    decision = budget.decide(TokenCount(tokens, False, "hermes"), limits, state=state, **kwargs)  # type: ignore[arg-type]
    assert decision.action in ("needs_compaction", "leave") and decision.value is None  # never a cap here
    return decision.compact, decision.reason


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


def test_a_trigger_below_the_floor_is_raised_to_it_and_never_above_the_ceiling() -> None:
    floor = trigger_floor(16_300, 1_400, 6_000)
    assert floor == 2 * (16_300 + 1_400 + 6_000 + MIN_UNANSWERED_TOKENS)  # half of it holds the minimum request
    assert trigger_floor(16_300, 1_400) == trigger_floor(16_300, 1_400, MIN_TAIL_TOKENS)
    limits = Limits(threshold=52_000, window=65_536, min_output_tokens=4_096, fallback_threshold=24_000, floor=floor)
    assert limits.raised and limits.trigger == floor and limits.configured_trigger == 24_000
    assert decide(floor - 1, limits, PolicyState())[0] is False
    assert decide(floor, limits, PolicyState()) == (
        True, f"request {floor} >= trigger floor (raised from 24000) {floor}")
    assert replace(limits, floor=100_000).trigger == limits.ceiling  # the window is the limit
    assert not replace(limits, floor=20_000).raised and replace(limits, floor=None).trigger == 24_000


@given(st.integers(0, 60_000), st.integers(0, 8_000), st.integers(0, 80_000), st.integers(8_000, 200_000),
       st.one_of(st.none(), st.integers(1, 20_000)))
def test_the_share_for_unanswered_results_is_never_zero(fixed: int, block: int, inflight: int, trigger: int,
                                                        tail: int | None) -> None:
    limits = Limits(threshold=trigger, window=trigger + 16_384, min_output_tokens=4_096)
    room, kept_tail = tail_budgets(limits, fixed_tokens=fixed, inflight_tokens=inflight, block_tokens=block,
                                   configured_tail=tail)
    assert room >= MIN_UNANSWERED_TOKENS
    assert kept_tail == tail if tail is not None else 0 <= kept_tail <= DEFAULT_TAIL_CAP
    # unanswered results are kept whenever the window can carry them beside the fixed part, block and tail
    assert room >= min(inflight, limits.ceiling - fixed - block - kept_tail)


@given(st.integers(1, 400_000))
def test_the_post_compaction_aim_leaves_room_below_the_trigger(window: int) -> None:
    """Half the trigger, lowered at small windows so at least ``POST_COMPACTION_ROOM_TOKENS`` (or the whole trigger)
    stay free below it for the next turns: never more than half, never negative."""
    limits = Limits.clamped(window, threshold=int(window * 0.75), min_output_tokens=4_096, fallback_margin_tokens=1_024)
    aim = limits.post_compaction_aim
    assert 0 <= aim <= limits.trigger // 2
    assert limits.trigger - aim >= min(POST_COMPACTION_ROOM_TOKENS, limits.trigger)


def test_a_small_window_leaves_room_for_five_heavy_turns_and_a_large_one_half_the_trigger() -> None:
    """The benchmark's windows (gap_bench.py): at 16,384 Hermes' 75% becomes the ceiling less the margin (13,824,
    ``budget.small_window_threshold``) and the aim leaves the workload's largest 4-turn growth free below it; the
    verbatim tail is what the aim leaves after the unanswered results, none when they fill it. At 65,536 (trigger
    49,152) half the trigger stays and the tail is capped."""
    threshold = budget.compression_window(16_384, 0.75,
                                          reserved_output_tokens=reserved_tokens(16_384, 4_096, 1_024))
    small = Limits.clamped(16_384, threshold=threshold, min_output_tokens=4_096, fallback_margin_tokens=1_024)
    assert small.trigger == 13_824 and small.post_compaction_aim == 13_824 - POST_COMPACTION_ROOM_TOKENS == 2_356
    assert tail_budgets(small, fixed_tokens=379, inflight_tokens=0, block_tokens=1_400)[1] == 2_356 - 1_779
    assert tail_budgets(small, fixed_tokens=379, inflight_tokens=900, block_tokens=1_400)[1] == 0
    large = Limits.clamped(65_536, threshold=49_152, min_output_tokens=4_096, fallback_margin_tokens=1_024)
    assert large.post_compaction_aim == 24_576
    assert tail_budgets(large, fixed_tokens=379, inflight_tokens=900, block_tokens=1_400)[1] == DEFAULT_TAIL_CAP
    assert tail_budgets(large, fixed_tokens=16_300, inflight_tokens=2_500, block_tokens=1_400)[1] == 24_576 - 20_200


def test_unanswered_results_get_the_window_not_half_the_trigger() -> None:
    """The README's example in the real CLI: ~16.3k fixed, trigger 24k, tail 6k. Half the trigger less the
    fixed part was 0 tokens for the results the model had not seen; the room is now what the window holds."""
    limits = Limits(threshold=52_000, window=65_536, min_output_tokens=4_096, fallback_threshold=24_000)
    room, tail = tail_budgets(limits, fixed_tokens=16_300, inflight_tokens=2_500, block_tokens=1_400,
                              configured_tail=6_000)
    assert tail == 6_000 and room == limits.ceiling - 16_300 - 1_400 - 6_000


@given(st.integers(1, 200_000), st.one_of(st.none(), st.integers(0, 200_000)), st.integers(-1, 400_000),
       st.booleans())
def test_held_means_at_the_trigger_and_kept_back(trigger: int, post: int | None, tokens: int, explicit: bool) -> None:
    """``held`` (what Hermes 0.22 is told: "over the threshold but compression is blocked") is exactly a request
    at or above the trigger that the cooldown keeps back; a compaction question never answers with a cap."""
    limits = Limits(threshold=trigger, window=trigger * 2 + 8_192, min_output_tokens=4_096)
    state = PolicyState(explicit=explicit, post_compaction_tokens=post)
    decision = budget.decide(TokenCount(tokens, False, "hermes"), limits, state=state)
    assert decision.held == (not decision.compact and tokens >= limits.trigger and post is not None)
    assert decision.held <= ("cooldown" in decision.reason)
    assert decision.compact or not explicit


def test_a_degraded_compaction_keeps_a_share_of_the_window_unless_configured() -> None:
    assert degraded_tail_tokens(48_000) == 48_000 // DEFAULT_TAIL_SHARE
    assert degraded_tail_tokens(48_000, 2_000) == 2_000
    assert degraded_tail_tokens(3) == 1  # never zero: a degraded list always keeps the latest turn


def test_every_limit_is_clamped_to_the_window() -> None:
    """The table of docs/compaction.md ("Small windows"): the defaults (4,096 reply, 1,024 margin) made for large
    windows leave 4K-16K windows a working ceiling; from 32K up they apply unchanged."""
    table = {4096: (512, 128, 3584), 8192: (1024, 256, 7168), 16384: (2048, 512, 14336), 32768: (4096, 1024, 28672),
             131072: (4096, 1024, 126976)}
    for window, (reply, margin, ceiling) in table.items():
        limits = Limits.clamped(window, threshold=window, min_output_tokens=4096, fallback_margin_tokens=1024,
                                fallback_threshold=10 * window)
        assert (limits.min_output_tokens, limits.fallback_margin_tokens, limits.ceiling) == (reply, margin, ceiling)
        assert limits.min_cap_tokens == MIN_CAP_TOKENS and limits.trigger == limits.threshold == ceiling


@given(st.integers(1, 2_000_000), st.integers(1, 100_000), st.integers(0, 100_000), st.integers(1, 4_000_000),
       st.one_of(st.none(), st.integers(1, 4_000_000)))
def test_clamped_limits_always_leave_a_trigger_below_the_ceiling_below_the_window(
        window: int, reply: int, margin: int, threshold: int, fallback: int | None) -> None:
    limits = Limits.clamped(window, threshold=threshold, min_output_tokens=reply, fallback_margin_tokens=margin,
                            fallback_threshold=fallback)
    assert 1 <= limits.min_cap_tokens <= limits.min_output_tokens <= max(window // 8, 1)
    assert 0 <= limits.fallback_margin_tokens <= window // 32
    assert 1 <= limits.trigger <= max(limits.ceiling, 1) and limits.ceiling < window or window < 8
    assert reserved_tokens(window, reply, margin) == limits.min_output_tokens + limits.fallback_margin_tokens
