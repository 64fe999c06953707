"""Property tests: for any transcript the compacted list is valid, pair-safe, within budget,
keeps the latest user request, is deterministic and never raises."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_engine.compaction import build_compacted_messages, degrade
from compaction.conversations import (
    assert_alternates,
    assert_valid_openai,
    assert_verbatim_in_order,
    block,
    canonical,
    cl100k_messages,
    conversation_part,
    conversations,
    is_ours,
    latest_real_request,
)

FAST = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
tail_budgets = st.sampled_from([0, 1, 40, 200, 1_000, 5_000, 20_000])


def _tail(result_messages: list[dict], carried: bool) -> list[dict]:
    part = conversation_part(result_messages)
    return part[1:] if carried else part


@FAST
@given(messages=conversations(), fresh_tail_tokens=tail_budgets)
def test_any_transcript_gives_a_valid_pair_safe_list_within_budget(messages: list, fresh_tail_tokens: int) -> None:
    before = copy.deepcopy(messages)
    result = build_compacted_messages(
        messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=cl100k_messages
    )
    assert messages == before, "the input must not be mutated"
    assert_valid_openai(result.messages)
    assert sum(1 for m in result.messages if text_starts(m, "[Baton handoff ")) == 1
    tail = _tail(result.messages, result.latest_request_carried)
    assert len(tail) == result.tail_messages
    assert result.tail_tokens == (cl100k_messages(tail) if tail else 0)
    answered, inflight = tail[:len(tail) - result.inflight_messages], tail[len(tail) - result.inflight_messages:]
    assert not answered or cl100k_messages(answered) <= fresh_tail_tokens
    stubs = [m for m in inflight if m["role"] == "tool"
             and str(m["content"]).startswith("[Result elided by Baton at compaction:")]
    assert len(stubs) == result.inflight_elided  # results over the budget became stubs, their calls kept
    verbatim = [m for m in inflight if m not in stubs]
    if result.inflight_elided and any(m["role"] == "tool" for m in verbatim):  # the call itself always stays
        assert cl100k_messages(inflight) <= fresh_tail_tokens  # the stubs count: the group stays in its room
    assert result.inflight_elided or not inflight or cl100k_messages(inflight) <= fresh_tail_tokens
    assert result.block_tokens <= 1400
    shown = [m for m in conversation_part(result.messages) if m not in stubs]
    assert_verbatim_in_order(shown, messages)
    latest = latest_real_request(messages)
    if latest is not None:
        assert latest in conversation_part(result.messages)


@FAST
@given(messages=conversations(clean=True), fresh_tail_tokens=tail_budgets)
def test_clean_transcripts_keep_strict_alternation(messages: list, fresh_tail_tokens: int) -> None:
    result = build_compacted_messages(
        messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=cl100k_messages
    )
    assert_valid_openai(result.messages)
    assert_alternates(result.messages)
    assert (result.dropped_orphans, result.stripped_tool_calls, result.dropped_malformed) == (0, 0, 0)
    assert result.messages[: len(_leading_system(messages))] == _leading_system(messages)


@FAST
@given(messages=conversations(), fresh_tail_tokens=tail_budgets)
def test_same_input_gives_the_same_bytes(messages: list, fresh_tail_tokens: int) -> None:
    def run() -> str:
        return canonical(
            build_compacted_messages(
                copy.deepcopy(messages),
                block=block(stale=True),
                fresh_tail_tokens=fresh_tail_tokens,
                count_tokens=cl100k_messages,
            ).messages
        )

    assert run() == run()


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(
                        ["role", "content", "tool_calls", "tool_call_id", "id", "function", "name", "type", "text"]
                    )
                    | st.text(max_size=5),
                    inner,
                    max_size=4,
                )
            ),
            max_leaves=12,
        ),
        max_size=8,
    ),
    fresh_tail_tokens=st.integers(-5, 500),
)
def test_arbitrary_json_never_raises_and_still_yields_a_valid_list(messages: list, fresh_tail_tokens: int) -> None:
    result = build_compacted_messages(
        messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=cl100k_messages
    )
    assert_valid_openai(result.messages)
    degraded = degrade(messages, reason="tokenizer_down", keep_recent=4, max_tokens=300, count_tokens=cl100k_messages)
    assert_valid_openai(degraded.messages)


@FAST
@given(
    messages=conversations(),
    keep_recent=st.integers(0, 12),
    max_tokens=st.sampled_from([0, 50, 500, 5_000]),
    reason=st.sampled_from(["validation_failed", "not_initialised", "disk_not_writable", "tokenizer_down", "bogus"]),
)
def test_degradation_is_valid_bounded_and_keeps_the_request(
    messages: list, keep_recent: int, max_tokens: int, reason: str
) -> None:
    result = degrade(
        messages, reason=reason, keep_recent=keep_recent, max_tokens=max_tokens, count_tokens=cl100k_messages
    )
    assert_valid_openai(result.messages)
    tail = _tail(result.messages, result.latest_request_carried)
    assert len(tail) <= keep_recent
    if tail:
        assert cl100k_messages(tail) <= max_tokens
    note = next(m for m in result.messages if m["role"] == "user" and is_ours(m))
    expected_reason = reason if reason != "bogus" else "unspecified"
    assert note["content"].startswith(f"[Baton degraded compaction | reason: {expected_reason}]")
    assert_verbatim_in_order(conversation_part(result.messages), messages)
    latest = latest_real_request(messages)
    if latest is not None:
        assert latest in conversation_part(result.messages)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=conversations(),
    fresh_tail_tokens=tail_budgets,
    failure=st.sampled_from(["raise", "negative", "none", "bool"]),
)
def test_a_broken_counter_falls_back_and_still_keeps_the_shape(
    messages: list, fresh_tail_tokens: int, failure: str
) -> None:
    def broken(_: list[dict]) -> object:
        if failure == "raise":
            raise ConnectionError("tokenizer down")
        return {"negative": -1, "none": None, "bool": True}[failure]

    result = build_compacted_messages(messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=broken)  # type: ignore[arg-type]
    assert result.counting_fell_back
    assert_valid_openai(result.messages)
    latest = latest_real_request(messages)
    if latest is not None:
        assert latest in conversation_part(result.messages)


def text_starts(message: dict, prefix: str) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith(prefix)


def _leading_system(messages: list) -> list:
    leading = []
    for message in messages:
        if message.get("role") != "system":
            break
        leading.append(message)
    return leading


def _containers(value: object) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for item in value.values() for i in _containers(item))]
    if isinstance(value, list):
        return [id(value), *(i for item in value for i in _containers(item))]
    return []


@FAST
@given(messages=conversations(), fresh_tail_tokens=tail_budgets)
def test_the_compacted_list_never_aliases_the_hosts_messages(messages: list, fresh_tail_tokens: int) -> None:
    """The builder reads the host's dicts in place (no copy of the compacted region) and copies only what it
    returns: the host may edit the new list's messages without touching its own, and the reverse."""
    result = build_compacted_messages(messages, block=block(), fresh_tail_tokens=fresh_tail_tokens,
                                      count_tokens=cl100k_messages)
    degraded = degrade(messages, reason="disk_not_writable", keep_recent=4, max_tokens=2_000,
                       count_tokens=cl100k_messages)
    host = set(_containers(messages))
    assert not host & set(_containers(result.messages))
    assert not host & set(_containers(degraded.messages))
