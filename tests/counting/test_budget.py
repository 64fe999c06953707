from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baton_engine.budget import (
    MIN_THINKING_BUDGET_TOKENS,
    Decision,
    Margins,
    compression_pressure,
    compression_window,
    decide,
    margin_for,
    reply_room,
    small_window_threshold,
    threshold_tokens,
)
from baton_engine.policy import MIN_CAP_TOKENS, Limits, PolicyState
from baton_engine.request import OutputCap
from baton_engine.shapes.cap import OUTPUT_CAP_FIELDS, apply_output, find_cap, find_thinking_budget, write_cap
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import UNCONFIRMED_SHARE

EXACT = "hf:Qwen/Qwen3-8B"


def exact(tokens: int) -> TokenCount:
    return TokenCount(tokens, True, EXACT)


def decide_output(count: TokenCount, cap: OutputCap | None, limits: Limits, unconfirmed_margin: int = 0) -> Decision:
    """``decide`` for a request about to be sent (no policy state: only its output budget)."""
    return decide(count, limits, cap=cap,
                  margins=Margins(fallback=limits.fallback_margin_tokens, unconfirmed=unconfirmed_margin))


def budget(request: dict, count: TokenCount, window: int = 100_000, reserve: int = 4096,
           margin: int = 1024) -> tuple[Decision, dict | None]:
    """The decision for ``request`` and the request the writer makes of it (None: left unchanged)."""
    cap = find_cap(request)
    decision = decide_output(count, cap, Limits.of_window(window, reserve, margin))
    if decision.action == "leave" or decision.value is None:
        return decision, None
    assert cap is not None
    return decision, write_cap(request, cap, decision.value)


def test_threshold_matches_hermes_default() -> None:
    assert threshold_tokens(131072, 0.75) == 98304
    assert threshold_tokens(200_000, 0.5) == 100_000


@pytest.mark.parametrize(("window", "expected"), [(4_096, 3_968), (8_192, 7_680), (16_384, 14_336),
                                                   (24_576, 19_968), (32_768, 24_576), (131_072, 98_304)])
def test_a_small_window_keeps_less_of_hermes_reserve(window: int, expected: int) -> None:
    """Below 32,768 the room Hermes' 75% keeps free shrinks with the window; from 32,768 up it is Hermes' own."""
    assert small_window_threshold(window, 0.75) == expected >= threshold_tokens(window, 0.75)


@given(st.integers(1, 500_000), st.floats(0.01, 1.0))
def test_the_small_window_threshold_is_never_below_hermes_own(window: int, percent: float) -> None:
    assert threshold_tokens(window, percent) <= small_window_threshold(window, percent) <= window


def test_window_reserves_output_override_wins() -> None:
    assert compression_window(131072, 0.75) == 98304
    assert compression_window(131072, 0.9, reserved_output_tokens=65536) == 65536
    assert compression_window(131072, 0.75, override=50_000) == 50_000


@pytest.mark.parametrize(
    "kwargs", [dict(context_length=0, threshold_percent=0.5), dict(context_length=1000, threshold_percent=1.5),
               dict(context_length=1000, threshold_percent=0.5, override=0),
               dict(context_length=1000, threshold_percent=0.5, reserved_output_tokens=1000)]
)
def test_window_rejects_nonsense(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        compression_window(**kwargs)


def test_pressure_compacts_exactly_when_less_than_reserve_remains() -> None:
    window, reserve = 100_000, 4096
    assert compression_pressure(window - reserve, reserve) < window  # exactly R left: no compaction
    assert compression_pressure(window - reserve + 1, reserve) >= window
    with pytest.raises(ValueError):
        compression_pressure(-1, reserve)


def test_lowers_hermes_65536_default_to_what_fits() -> None:
    request = {"model": "m", "messages": [], "max_tokens": 65536}
    decision, out = budget(request, exact(90_000), window=98_304)
    assert decision.action == "lower_cap_to" and decision.value == 8304 and out["max_tokens"] == 8304
    assert request["max_tokens"] == 65536


def test_caller_cap_smaller_than_room_is_left() -> None:
    decision, out = budget({"messages": [], "max_completion_tokens": 2000}, exact(1000))
    assert decision.action == "leave" and out is None


def test_no_cap_is_never_added() -> None:
    """Servers default the output to the remaining window; a cap field can be refused (OpenAI reasoning
    models reject max_tokens), so a request without one is left alone."""
    decision, out = budget({"model": "o3-mini", "messages": []}, exact(50_000))
    assert decision.action == "leave" and out is None and "no output cap" in decision.reason


def test_below_reserve_lowers_to_what_is_left_never_a_certain_refusal() -> None:
    """A 32k model after a /model switch: the room (3,900) is below the minimum reply; the cap is lowered to
    it (a short reply), never left at 65,536, which a strict server refuses."""
    request = {"messages": [], "max_tokens": 65536}
    decision, out = budget(request, exact(28_868), window=32_768)
    assert decision.action == "lower_cap_to" and decision.short and decision.value == 3900
    assert out is not None and out["max_tokens"] == 3900
    assert budget({"messages": []}, exact(100_000 - 4095))[0].action == "leave"  # no cap: the server's default


def test_a_prompt_that_leaves_less_than_the_smallest_cap_is_shortened_never_sent_with_a_useless_cap() -> None:
    """Issue 30, "the cap near the limit": caps of 64, 8 and 1 token at W-64, W-8, W-1 (a reply of 1 token is
    useless; shortening started only at W). Below ``MIN_CAP_TOKENS`` the request needs compaction, and the cap it
    carries if it cannot be shortened is the smallest cap, never the caller's 65,536."""
    request = {"messages": [], "max_tokens": 65536}
    assert budget(request, exact(100_000 - MIN_CAP_TOKENS))[0].value == MIN_CAP_TOKENS
    for left in (MIN_CAP_TOKENS - 1, 64, 8, 1, 0, -500):
        decision, out = budget(request, exact(100_000 - left))
        assert decision.action == "needs_compaction", left
        assert out is not None and out["max_tokens"] == MIN_CAP_TOKENS  # what it carries unshortened
    assert "alone does not fit" in budget(request, exact(100_000))[0].reason
    assert budget({"messages": []}, exact(100_000 - 8))[0].action == "needs_compaction"  # no cap: no useful reply


def test_an_unconfirmed_count_keeps_its_room_even_when_the_reply_gets_short() -> None:
    request = {"messages": [], "max_tokens": 65536}
    cap = find_cap(request)
    kept = decide_output(exact(20_000), cap, Limits.of_window(80_000, 4096, 1024), unconfirmed_margin=2_500)
    assert kept.value == 80_000 - 20_000 - 2_500
    tight = decide_output(exact(60_000), cap, Limits.of_window(80_000, 4096, 1024), unconfirmed_margin=17_000)
    assert tight.value == 3_000 and tight.short  # the count may be low: room for it first
    crowded = decide_output(exact(74_000), cap, Limits.of_window(80_000, 4096, 1024), unconfirmed_margin=37_000)
    assert crowded.value == MIN_CAP_TOKENS and crowded.short  # the room gives way down to the smallest reply


def test_the_unconfirmed_cap_near_the_limit_is_monotone() -> None:
    """Issue 30: an unconfirmed route got a cap of 1 at a 42,666-token prompt and 21,333 at 42,667 (a larger
    prompt, a larger cap). The unconfirmed room is ``verify.UNCONFIRMED_SHARE`` of the prompt."""
    request = {"messages": [], "max_tokens": 65536}
    cap = find_cap(request)
    limits = Limits.of_window(64_000, 4096, 1024)
    caps = []
    for prompt in (42_000, 42_665, 42_666, 42_667, 43_000):
        decision = decide_output(exact(prompt), cap, limits, unconfirmed_margin=math.ceil(UNCONFIRMED_SHARE * prompt))
        caps.append(decision.value if decision.action != "leave" else 65536)
    assert caps == sorted(caps, reverse=True), caps
    assert all(value >= MIN_CAP_TOKENS for value in caps)


def test_unknown_count_leaves_request_unchanged() -> None:
    decision, out = budget({"messages": [], "max_tokens": 10}, TokenCount(None, False, "unknown"))
    assert decision.action == "leave" and out is None and "unknown" in decision.reason


def test_margin_applies_once_the_count_says_what_it_includes() -> None:
    assert margin_for(exact(5), 1024) == 0
    assert margin_for(TokenCount(1029, False, "rough+margin", fallback_reason="vllm: CannotCount",
                                 margin_tokens=1024), 1024) == 0
    assert margin_for(TokenCount(900, False, "anchored", margin_tokens=96), 1024) == 0
    assert margin_for(TokenCount(5, False, "rough+margin"), 1024) == 1024  # the field decides, not the name
    assert margin_for(TokenCount(5, False, "tiktoken:o200k_base+chat-overhead"), 1024) == 1024
    decision, out = budget({"messages": [], "max_tokens": 65536}, TokenCount(50_000, False, "tiktoken:o200k_base"))
    assert out is not None and out["max_tokens"] == 100_000 - 50_000 - 1024


def test_aliases_in_extra_body_keep_field_and_location_and_conflicts_are_removed() -> None:
    request = {"messages": [], "max_tokens": 9000, "extra_body": {"max_completion_tokens": 7000, "top_k": 5}}
    assert budget(request, exact(10_000))[1] is None  # the honoured cap, 7,000, fits: left alone
    _, out = budget(request, exact(95_000))
    assert out == {"messages": [], "extra_body": {"top_k": 5, "max_completion_tokens": 5000}}
    nested_only = {"messages": [], "extra_body": {"max_completion_tokens": 50_000}}
    _, out = budget(nested_only, exact(60_000))
    assert out == {"messages": [], "extra_body": {"max_completion_tokens": 40_000}}
    assert nested_only["extra_body"] == {"max_completion_tokens": 50_000}


@pytest.mark.parametrize(("request_", "honoured"), [
    # vLLM reads max_completion_tokens before max_tokens, whichever is smaller
    ({"max_tokens": 1000, "max_completion_tokens": 50_000}, OutputCap("max_completion_tokens", 50_000)),
    ({"max_tokens": 50_000, "max_completion_tokens": 1000}, OutputCap("max_completion_tokens", 1000)),
    # the OpenAI SDK merges extra_body over the top level: its value is the one sent
    ({"max_tokens": 1000, "extra_body": {"max_tokens": 50_000}}, OutputCap("max_tokens", 50_000, "extra_body")),
    ({"max_tokens": 50_000, "extra_body": {"max_completion_tokens": 2000}},
     OutputCap("max_completion_tokens", 2000, "extra_body")),
    ({"max_completion_tokens": 3000, "extra_body": {"max_tokens": 1000}}, OutputCap("max_completion_tokens", 3000)),
    ({"max_tokens": 4000, "extra_body": {"max_tokens": None}}, None),  # null is sent: no max_tokens at all
    ({"max_output_tokens": 5000}, OutputCap("max_output_tokens", 5000)),  # the Responses API
    ({"inferenceConfig": {"maxTokens": 6000, "temperature": 0.2}}, OutputCap("maxTokens", 6000, "inferenceConfig")),
])
def test_the_cap_is_the_one_the_provider_honours(request_: dict, honoured: OutputCap | None) -> None:
    assert find_cap({"messages": [], **request_}) == honoured


def test_the_writer_lowers_the_honoured_cap_where_it_lives() -> None:
    request = {"messages": [], "max_tokens": 1000, "max_completion_tokens": 50_000}
    decision, out = budget(request, exact(60_000))  # 1,000 would fit; the honoured 50,000 does not
    assert decision.action == "lower_cap_to" and out == {"messages": [], "max_completion_tokens": 40_000}
    bedrock = {"modelId": "m", "messages": [], "inferenceConfig": {"maxTokens": 65_536, "temperature": 0.2}}
    _, out = budget(bedrock, exact(90_000))
    assert out == {"modelId": "m", "messages": [], "inferenceConfig": {"maxTokens": 10_000, "temperature": 0.2}}
    assert bedrock["inferenceConfig"]["maxTokens"] == 65_536  # the input's nested mapping is not mutated


def test_invalid_caps_are_ignored() -> None:
    request = {"messages": [], "max_tokens": True, "max_completion_tokens": -5, "max_output_tokens": "9"}
    assert find_cap(request) is None
    decision, out = budget(request, exact(10_000))
    assert decision.action == "leave" and out is None


caps = st.one_of(st.none(), st.integers(-10, 200_000), st.booleans(), st.text(max_size=3))
fields = st.sampled_from(OUTPUT_CAP_FIELDS)
requests = st.builds(
    lambda top, nested, keep_extra: {
        "messages": [{"role": "user", "content": "hi"}],
        **{f: v for f, v in top.items() if v is not None},
        **({"extra_body": {f: v for f, v in nested.items() if v is not None}} if keep_extra else {}),
    },
    st.dictionaries(fields, caps, max_size=3),
    st.dictionaries(fields, caps, max_size=3),
    st.booleans(),
)
counts = st.one_of(
    st.builds(exact, st.integers(0, 300_000)),
    st.builds(lambda t, m: TokenCount(t + m, False, "rough+margin", fallback_reason="x: CannotCount",
                                      margin_tokens=m), st.integers(0, 300_000), st.integers(1, 5000)),
    st.builds(lambda t, m: TokenCount(t + m, False, "anchored", margin_tokens=m),
              st.integers(0, 300_000), st.integers(1, 5000)),
    st.builds(lambda t: TokenCount(t, False, "other"), st.integers(0, 300_000)),
    st.just(TokenCount(None, False, "unknown")),
)


@given(requests, counts, st.integers(1, 300_000), st.integers(1, 10_000), st.integers(0, 5000))
def test_output_budget_properties(request: dict, count: TokenCount, window: int, reserve: int, margin: int) -> None:
    before = copy.deepcopy(request)
    cap = find_cap(request)
    limits = Limits.of_window(window, reserve, margin)
    decision = decide_output(count, cap, limits)
    used_margin = margin_for(count, limits.fallback_margin_tokens)
    sent = {f: v for f, v in before.items() if f in OUTPUT_CAP_FIELDS} | {  # the body the SDK sends
        f: v for f, v in (before.get("extra_body") or {}).items() if f in OUTPUT_CAP_FIELDS}
    caller = [v for f in OUTPUT_CAP_FIELDS if isinstance(v := sent.get(f), int) and not isinstance(v, bool) and v > 0]
    assert (cap is None) == (not caller) and (cap is None or cap.value == caller[0])
    assert limits.min_output_tokens <= max(window // 8, 1) and limits.fallback_margin_tokens <= window // 32
    if decision.action != "lower_cap_to":
        if count.tokens is not None and cap is not None and decision.action == "leave":
            assert count.tokens + cap.value + used_margin <= window  # a cap left alone fits
        if decision.action == "needs_compaction":  # less than the smallest cap left
            assert window - count.tokens - used_margin < min(limits.min_cap_tokens, *(caller or [window]))
            assert cap is None or decision.value == min(cap.value, limits.min_cap_tokens)
        return
    assert cap is not None and decision.value is not None  # only an existing cap is ever lowered
    out = write_cap(request, cap, decision.value)
    assert request == before  # never mutates
    all_caps = [v for d in (out, out.get("extra_body") or {}) for f, v in d.items() if f in OUTPUT_CAP_FIELDS]
    assert all_caps == [decision.value]  # exactly one output field remains, the one the caller used
    assert (cap.field in (out.get("extra_body") or {})) == (cap.within == "extra_body")
    assert count.tokens + decision.value + used_margin <= window  # never exceeds W
    assert decision.value >= limits.min_cap_tokens  # never a useless cap
    available = window - count.tokens - used_margin
    assert decision.value >= min(limits.min_output_tokens, caller[0], available)  # never below R (or B) while one fits
    assert decision.short == (decision.value < min(limits.min_output_tokens, caller[0]))
    assert decision.value < caller[0]
    assert {k for k in out if k not in OUTPUT_CAP_FIELDS} == {k for k in before if k not in OUTPUT_CAP_FIELDS}


def _sent_cap(prompt: int, caller: int, limits: Limits, share: float) -> int:
    """The cap a request of ``prompt`` exact tokens carries out (unshortened), its count unconfirmed by ``share``."""
    decision = decide_output(exact(prompt), OutputCap("max_tokens", caller), limits,
                             unconfirmed_margin=math.ceil(share * prompt))
    return caller if decision.action == "leave" else decision.value  # type: ignore[return-value]


@given(st.integers(1, 300_000), st.integers(0, 300_000), st.integers(0, 300_000), st.integers(1, 200_000),
       st.integers(1, 10_000), st.integers(0, 5000), st.sampled_from([0.0, UNCONFIRMED_SHARE]))
def test_the_cap_is_monotone_in_the_prompt(window: int, smaller: int, larger: int, caller: int, reserve: int,
                                          margin: int, share: float) -> None:
    """A larger prompt never gets a larger cap, confirmed or not; no cap sent is below the smallest useful one
    (unless the caller asked for less) or above what the window leaves for a prompt that fits."""
    smaller, larger = sorted((smaller, larger))
    limits = Limits.of_window(window, reserve, margin)
    assert _sent_cap(larger, caller, limits, share) <= _sent_cap(smaller, caller, limits, share)
    sent = _sent_cap(smaller, caller, limits, share)
    assert sent >= min(caller, limits.min_cap_tokens)
    if window - smaller >= limits.min_cap_tokens:
        assert smaller + sent <= window


@given(st.integers(0, 10**6), st.integers(1, 10**5))
def test_pressure_is_p_plus_r_minus_one(prompt: int, reserve: int) -> None:
    window = prompt + reserve
    assert compression_pressure(prompt, reserve) == window - 1


def thinking_request(budget_tokens: int, max_tokens: int | None = None) -> dict:
    """What Hermes 0.19 sends for manual extended thinking: ``max_tokens = budget + 4096`` (at least)."""
    return {"model": "claude-sonnet-4-5", "messages": [], "temperature": 1,
            "max_tokens": max_tokens if max_tokens is not None else budget_tokens + 4096,
            "thinking": {"type": "enabled", "budget_tokens": budget_tokens}}


def test_a_lowered_cap_lowers_the_thinking_budget_and_keeps_the_answer_room() -> None:
    request = thinking_request(32_000)  # Hermes' "high" budget: max_tokens 36,096
    before = copy.deepcopy(request)
    decision, out = apply_output(request, exact(80_000), Limits.of_window(100_000, 4096, 1024))
    assert decision.action == "lower_cap_to" and out is not None
    assert out["max_tokens"] == 20_000 and out["thinking"] == {"type": "enabled", "budget_tokens": 20_000 - 4096}
    assert request == before  # the input (and its thinking mapping) is never mutated


def test_a_thinking_budget_that_still_fits_is_kept() -> None:
    _, out = apply_output(thinking_request(8000, max_tokens=64_000), exact(80_000), Limits.of_window(100_000, 4096, 1024))
    assert out is not None and out["max_tokens"] == 20_000 and out["thinking"]["budget_tokens"] == 8000


def test_no_room_for_the_minimum_thinking_budget_is_needs_compaction() -> None:
    """Room for a 4,096-token answer but not for 1,024 thinking tokens beside it: an invalid request
    (budget_tokens >= max_tokens, or < 1,024) is never written."""
    decision, out = apply_output(thinking_request(8000), exact(100_000 - 5000), Limits.of_window(100_000, 4096, 1024))
    assert decision.action == "needs_compaction" and out is None and "thinking" in decision.reason
    decision, out = apply_output(thinking_request(8000), exact(100_000 - 4096 - 1024), Limits.of_window(100_000, 4096, 1024))
    assert out is not None and out["thinking"]["budget_tokens"] == 1024 and out["max_tokens"] == 4096 + 1024


@given(window=st.sampled_from([4096, 16_384, 64_000, 200_000]), budget=st.integers(1024, 32_000),
       answer=st.integers(1, 8192))
def test_the_reply_room_a_shortening_keeps_is_what_a_thinking_request_needs(window: int, budget: int,
                                                                            answer: int) -> None:
    """A prompt that leaves ``reply_room`` is sent with a valid thinking budget; one token more needs compaction
    (the room is no larger than needed). At 1eb3d6b the shortening kept the minimum reply only: Hermes' 4,000
    thinking tokens in a 4,096 window then had no room, and the request went out with its 16,384 cap."""
    request = thinking_request(budget, max_tokens=budget + answer)
    limits = Limits.clamped(window, threshold=window, min_output_tokens=4096, fallback_margin_tokens=0)
    prompt = window - reply_room(limits, find_cap(request), budget)
    decision, out = apply_output(request, exact(prompt), limits)
    assert decision.action != "needs_compaction"
    sent = out if out is not None else request
    assert MIN_THINKING_BUDGET_TOKENS <= sent["thinking"]["budget_tokens"] < sent["max_tokens"] <= window - prompt
    assert apply_output(request, exact(prompt + 1), limits)[0].action == "needs_compaction"


def test_adaptive_thinking_has_no_budget_to_lower() -> None:
    request = {"messages": [], "max_tokens": 64_000, "thinking": {"type": "adaptive", "display": "summarized"}}
    assert find_thinking_budget(request) is None
    _, out = apply_output(request, exact(80_000), Limits.of_window(100_000, 4096, 1024))
    assert out == {**request, "max_tokens": 20_000}


@given(st.integers(1024, 64_000), st.integers(0, 20_000), st.integers(0, 150_000), st.integers(1, 8192))
def test_a_written_thinking_request_is_always_valid(budget_tokens: int, answer: int, prompt: int,
                                                    reserve: int) -> None:
    request = thinking_request(budget_tokens, budget_tokens + answer)
    before = copy.deepcopy(request)
    decision, out = apply_output(request, exact(prompt), Limits.of_window(100_000, reserve, 0))
    assert request == before
    if out is None:
        return
    thinking = out["thinking"]["budget_tokens"]
    assert 1024 <= thinking < out["max_tokens"] <= 100_000 - prompt  # what Anthropic accepts, within the window
    assert thinking <= budget_tokens and out["max_tokens"] - thinking >= min(max(answer, 1), reserve)


@given(counts, st.integers(1, 10**6), st.integers(1, 300_000), st.integers(1, 10_000), st.integers(0, 5000))
def test_one_decision_answers_both_questions_on_one_count(count: TokenCount, cap_value: int, window: int,
                                                          reserve: int, margin: int) -> None:
    """The same count asked both ways: as a compaction question (policy state) the answer never carries a cap;
    as a request about to be sent it compacts only when the prompt alone does not fit, the margin included."""
    limits = Limits(threshold=window, window=window, min_output_tokens=reserve)
    asked = decide(count, limits, state=PolicyState(), margins=Margins(fallback=margin))
    assert asked.value is None and asked.action in ("needs_compaction", "leave")
    if count.tokens is not None:
        assert asked.compact == (count.tokens >= min(limits.trigger, limits.ceiling))
    sent = decide(count, limits, cap=OutputCap("max_tokens", cap_value), margins=Margins(fallback=margin))
    if sent.compact:
        assert count.tokens is not None and count.tokens + margin_for(count, margin) >= window
    with pytest.raises(ValueError):
        decide(count, limits, margins=Margins(fallback=-1))
