"""A route's counts checked against what its provider reports: confirmed, calibrated, and the room kept before."""

from __future__ import annotations

import copy
import math

import pytest

from baton_engine.shapes.cap import apply_output
from baton_engine.policy import Limits
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.counter import counting_mode
from baton_engine.tokens.verify import (
    CALIBRATED_MARGIN_FLOOR,
    CALIBRATED_MARGIN_SHARE,
    UNCONFIRMED_SHARE,
    SETTLED,
    RouteCheck,
    raw_tokens,
    reported_prompt_tokens,
    truncated,
    within_tolerance,
)

HF = "hf:qwen3"


def exact(tokens: int) -> TokenCount:
    return TokenCount(tokens, True, HF)


def test_a_right_tokenizer_is_confirmed_and_stays_exact() -> None:
    check = RouteCheck()
    assert check.verdict == "unconfirmed"
    for tokens in (3_000, 9_500, 21_000):
        assert not check.observe(exact(tokens), tokens)
    assert check.verdict == "confirmed" and check.mismatches == 0
    assert check.adjust(exact(40_000)) == exact(40_000)
    assert check.status(HF)["advice"] is None


def test_a_wrong_tokenizer_flips_once_and_budgets_on_the_providers_scale() -> None:
    """o200k counting a Qwen3 prompt: 23,850 counted, 29,047 reported (the issue's figures)."""
    check = RouteCheck()
    assert check.observe(exact(23_850), 29_047)  # flipped
    assert not check.observe(exact(24_000), 29_230)  # already calibrated: said once
    assert check.verdict == "calibrated" and check.mismatches == 2
    adjusted = check.adjust(exact(50_000))
    scaled = math.ceil(check.ratio * 50_000)
    assert check.ratio == pytest.approx(29_230 / 24_000)
    assert adjusted.tokens == scaled + math.ceil(CALIBRATED_MARGIN_SHARE * scaled) + CALIBRATED_MARGIN_FLOOR
    assert not adjusted.exact and counting_mode(adjusted) == "calibrated"
    assert adjusted.margin_tokens == adjusted.tokens - scaled
    status = check.status(HF)
    assert status["last_counted"] == 24_000 and status["last_reported"] == 29_230
    assert "undercounts this server by 22%" in status["advice"] and "baton.tokenizer" in status["advice"]


def test_calibrated_counts_make_the_clamp_fit_the_real_prompt() -> None:
    check = RouteCheck()
    check.observe(exact(10_000), 12_200)
    real_prompt, counted = 61_000, exact(50_000)
    decision, rewritten = apply_output({"messages": [], "max_tokens": 80_000}, check.adjust(counted),
                                       Limits.of_window(80_000, 4096, 1024))
    assert rewritten is not None and real_prompt + rewritten["max_tokens"] <= 80_000
    uncalibrated, raw = apply_output({"messages": [], "max_tokens": 80_000}, counted,
                                     Limits.of_window(80_000, 4096, 1024))
    assert raw is not None and real_prompt + raw["max_tokens"] > 80_000  # what a wrong tokenizer did before


def test_within_tolerance_keeps_exact_and_adds_the_small_excess() -> None:
    check = RouteCheck()
    assert within_tolerance(10_000, 10_008) and not within_tolerance(10_000, 10_030)
    check.observe(exact(10_000), 10_003)
    assert check.verdict == "confirmed"
    adjusted = check.adjust(exact(20_000))
    assert adjusted.exact and adjusted.tokens == 20_003


def test_only_tokenizer_counts_are_verified() -> None:
    check = RouteCheck()
    anchored = TokenCount(5_000, False, "anchored", margin_tokens=400)
    fallback = TokenCount(5_000, False, "rough+margin", fallback_reason="vllm: ConnectError", margin_tokens=1024)
    assert not check.observe(anchored, 9_000) and not check.observe(fallback, 9_000)
    assert not check.observe(None, 9_000) and not check.observe(exact(5_000), 0)
    assert check.verdict == "unconfirmed" and check.requests_seen == 0
    assert check.adjust(anchored) is anchored


def test_unconfirmed_routes_keep_room_for_the_first_request() -> None:
    check = RouteCheck()
    assert check.output_margin(exact(4_000)) == math.ceil(UNCONFIRMED_SHARE * 4_000)
    check.observe(exact(4_000), 4_000)
    assert check.output_margin(exact(4_000)) == 0


def test_a_calibrated_route_keeps_the_room_until_its_ratio_settles() -> None:
    """The engine asks with the count it budgets on, ``adjust``'s calibrated one (as the real-vLLM oracle's
    wrong-tokenizer run does): the room is a share of the provider-scale count until SETTLED responses."""
    check = RouteCheck()
    for seen in range(1, SETTLED + 1):
        budgeted = check.adjust(exact(10_000))
        assert check.output_margin(budgeted) == math.ceil(UNCONFIRMED_SHARE * raw_tokens(budgeted)) > 0
        check.observe(exact(3_000 * seen), 3_500 * seen)
    assert check.verdict == "calibrated" and check.output_margin(check.adjust(exact(10_000))) == 0


def test_a_check_copies_independently() -> None:
    """Hermes deep-copies the engine per agent: one agent's verdict must not move another's."""
    check = RouteCheck()
    copied = copy.deepcopy(check)
    check.observe(exact(1_000), 2_000)
    assert copied.verdict == "unconfirmed" and check.verdict == "calibrated"


@pytest.mark.parametrize(("usage", "expected"), [
    ({"prompt_tokens": 1200, "completion_tokens": 5, "total_tokens": 1205}, 1200),  # OpenAI-compatible
    ({"input_tokens": 900, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 200}, 4100),  # Anthropic
    ({"input_tokens": 900, "cache_read_tokens": 3000, "cache_write_tokens": 200}, 4100),  # Hermes' normalised names
    ({"input_tokens": 700, "output_tokens": 20}, 700),  # Responses API
    ({"completion_tokens": 5}, 0),
    ({"prompt_tokens": True}, 0),
])
def test_reported_prompt_size_from_every_usage_shape(usage: dict, expected: int) -> None:
    assert reported_prompt_tokens(usage) == expected


def test_a_cut_needs_a_count_above_the_servers_window_and_a_report_at_or_under_it() -> None:
    """Ollama's two cuts: to exactly its num_ctx (the old runners), or well under it (oldest messages dropped);
    a lower report while the count fits the window is a wrong tokenizer; estimates are never taken for a cut."""
    assert truncated(exact(6000), 4096, 4096) and truncated(exact(6000), 2300, 4096)
    assert not truncated(exact(4000), 3000, 4096)  # the count fits: nothing was cut
    assert not truncated(exact(6000), 5000, 4096)  # more than the window reached the model: no cut to it
    assert not truncated(exact(6000), 6000, 4096) and not truncated(None, 3000, 4096)
    assert not truncated(TokenCount(6000, False, "rough", margin_tokens=500), 3000, 4096)
    assert not truncated(exact(6000), 3000, 0)
