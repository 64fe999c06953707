"""UsageAnchor arithmetic (no tokenizer needed) and the counter + breaker + anchor path."""

from __future__ import annotations

import copy
import json
import math
import pickle

import pytest

from baton_engine.policy import Limits
from baton_engine.shapes.cap import OUTPUT_CAP_FIELDS, apply_output
from baton_engine.tokens.anchor import (
    DEFAULT_MARGIN_FLOOR_TOKENS,
    DEFAULT_MARGIN_SHARE,
    NON_PROMPT_KEYS,
    UsageAnchor,
)
from baton_engine.tokens.contract import CannotCount, TokenCount
from baton_engine.tokens.counter import TokenCounter, counting_mode
from baton_engine.tokens.rough import (
    RoughBackend,
    estimate_chat_request,
    estimate_messages_tokens_rough,
    estimate_tools_tokens_rough,
)
from conversations import TOOLS
from test_counter import WordBackend

SYSTEM = {"role": "system", "content": "You are a careful coding agent."}
USER = {"role": "user", "content": "run the tests and tell me what fails"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "run_tests", "arguments": "{\"target\": \"tests/\"}"}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "FAILED tests/test_ledger.py::test_settle\n" * 40}


def request(*messages: dict, **frame: object) -> dict:
    return {"messages": [SYSTEM, *messages], "tools": TOOLS, **frame}


def rough(messages: list[dict], tools: list | None = TOOLS) -> int:
    """The anchor's size measure: Hermes' chars/4 per message, digits at a full token each, tools chars/4."""
    digits = [sum(ch.isdigit() for ch in json.dumps(m, sort_keys=True, ensure_ascii=False)) for m in messages]
    return (sum(estimate_messages_tokens_rough([m]) + (3 * d + 3) // 4 for m, d in zip(messages, digits))
            + (estimate_tools_tokens_rough(tools) if tools else 0))


def appended(*messages: dict) -> int:
    """Rough estimate of appended messages only (no frame)."""
    return rough(list(messages), None)


def expected(base: int, ratio: float, rough_part: int) -> int:
    estimated = math.ceil(ratio * rough_part)
    return base + estimated + math.ceil(DEFAULT_MARGIN_SHARE * estimated) + DEFAULT_MARGIN_FLOOR_TOKENS


def test_nothing_observed_gives_none() -> None:
    anchor = UsageAnchor(recent_observations=2)
    assert anchor.estimate(request(USER)) is None and anchor.observations == 0
    for tokens in (900, 950, 990):
        anchor.observe_exact(request(USER), tokens)
    assert anchor.observations == 2  # the ratio window, for status


def test_prefix_extension_is_anchor_plus_scaled_appended_part_plus_proportional_margin() -> None:
    anchor = UsageAnchor()
    first = request(USER)
    anchor.observe_exact(first, 900)
    ratio = 900 / rough(first["messages"])
    grown = request(USER, CALL, RESULT)
    estimate = anchor.estimate(grown)
    assert estimate is not None
    assert estimate.tokens == expected(900, ratio, appended(CALL, RESULT))
    estimated = math.ceil(ratio * appended(CALL, RESULT))
    assert estimate.margin_tokens == math.ceil(DEFAULT_MARGIN_SHARE * estimated) + DEFAULT_MARGIN_FLOOR_TOKENS
    assert (estimate.exact, estimate.source, counting_mode(estimate)) == (False, "anchored", "anchored")
    same = anchor.estimate(first)
    assert same is not None and same.tokens == 900 + DEFAULT_MARGIN_FLOOR_TOKENS


def test_rewritten_history_is_scaled_whole_with_margin_on_the_whole() -> None:
    anchor = UsageAnchor()
    long = request(USER, CALL, RESULT, {"role": "assistant", "content": "two tests fail"})
    anchor.observe_exact(long, 3000)
    ratio = 3000 / rough(long["messages"])
    compacted = request({"role": "user", "content": "[brief] tests fail in ledger"}, USER)
    estimate = anchor.estimate(compacted)
    assert estimate is not None and estimate.tokens == expected(0, ratio, rough(compacted["messages"]))


def test_a_changed_frame_is_not_a_prefix_extension() -> None:
    anchor = UsageAnchor()
    first = request(USER)
    anchor.observe_exact(first, 900)
    ratio = 900 / rough(first["messages"])
    other_tools = {"messages": [SYSTEM, USER, CALL], "tools": TOOLS[:2]}
    estimate = anchor.estimate(other_tools)
    assert estimate is not None
    assert estimate.tokens == expected(0, ratio, rough(other_tools["messages"], TOOLS[:2]))
    kwargs = request(USER, CALL, chat_template_kwargs={"enable_thinking": False})
    assert anchor.estimate(kwargs).tokens == expected(0, ratio, rough(kwargs["messages"]))  # type: ignore[union-attr]


def test_output_budget_and_streaming_keys_are_not_frame() -> None:
    assert set(OUTPUT_CAP_FIELDS) <= NON_PROMPT_KEYS
    anchor = UsageAnchor()
    anchor.observe_exact(request(USER, max_tokens=65536, stream=True), 900)
    clamped = anchor.estimate(request(USER, CALL, max_tokens=12000))
    plain = anchor.estimate(request(USER, CALL))
    assert clamped == plain and plain is not None and plain.tokens < 2 * 900


def test_ratio_is_the_maximum_of_recent_observations() -> None:
    anchor = UsageAnchor(recent_observations=2)
    dense, sparse = request(USER), request(USER, CALL, RESULT)
    anchor.observe_exact(dense, 2 * rough(dense["messages"]))  # ratio 2
    anchor.observe_exact(sparse, rough(sparse["messages"]))  # ratio 1; the anchor is the latest
    grown = request(USER, CALL, RESULT, USER)
    assert anchor.estimate(grown).tokens == expected(  # type: ignore[union-attr]
        rough(sparse["messages"]), 2.0, appended(USER))
    anchor.observe_exact(sparse, rough(sparse["messages"]))  # the ratio-2 observation falls out of the window
    assert anchor.estimate(grown).tokens == expected(  # type: ignore[union-attr]
        rough(sparse["messages"]), 1.0, appended(USER))


@pytest.mark.parametrize("bad", [-1, True, 1.5, None])
def test_invalid_observations_and_requests_are_ignored(bad: object) -> None:
    anchor = UsageAnchor()
    anchor.observe_exact(request(USER), bad)  # type: ignore[arg-type]
    anchor.observe_exact({"messages": "not a list"}, 10)
    anchor.observe_exact({"messages": [{"content": object()}]}, 10)
    assert anchor.estimate(request(USER)) is None
    anchor.observe_exact(request(USER), 900)
    assert anchor.estimate({"messages": [{"content": object()}]}) is None
    assert anchor.estimate("nope") is None  # type: ignore[arg-type]


def test_copies_are_independent() -> None:
    anchor = UsageAnchor()
    anchor.observe_exact(request(USER), 900)
    copied = copy.deepcopy(anchor)
    restored = pickle.loads(pickle.dumps(anchor))
    copied.observe_exact(request(USER, CALL, RESULT), 5000)
    assert anchor.estimate(request(USER)).tokens == 900 + DEFAULT_MARGIN_FLOOR_TOKENS  # type: ignore[union-attr]
    assert restored.estimate(request(USER)) == anchor.estimate(request(USER))
    assert copied.estimate(request(USER, CALL, RESULT)).tokens == 5000 + DEFAULT_MARGIN_FLOOR_TOKENS  # type: ignore[union-attr]


def test_invalid_construction_is_rejected() -> None:
    for bad in ({"margin_share": -0.1}, {"margin_share": float("inf")}, {"margin_floor_tokens": -1},
                {"recent_observations": 0}):
        with pytest.raises(ValueError):
            UsageAnchor(**bad)  # type: ignore[arg-type]


# ---- through the counter --------------------------------------------------------------------------------------


def test_exact_counts_feed_the_anchor_and_failures_use_it() -> None:
    now = [0.0]
    backend = WordBackend()
    counter = TokenCounter(backend, fallback_margin_tokens=1024, clock=lambda: now[0])
    anchor = UsageAnchor()
    first = request(USER)
    exact = counter.count_chat(first, anchor)
    assert exact.exact and counting_mode(exact) == "exact"
    backend.fail = ConnectionError()
    grown = request(USER, CALL, RESULT)
    anchored = counter.count_chat(grown, anchor)
    assert anchored == TokenCount(expected(exact.tokens, exact.tokens / rough(first["messages"]),  # type: ignore[arg-type]
                                           appended(CALL, RESULT)), False, "anchored", None,
                                  "words: ConnectionError", anchored.margin_tokens)
    while_open = counter.count_chat(request(USER, CALL, RESULT, USER), anchor)
    assert while_open.source == "anchored" and "CircuitOpen" in (while_open.fallback_reason or "")
    assert backend.calls == 2 and counter.breaker_state().state == "open"
    assert counter.count_chat(grown).source == "rough+margin"  # without an anchor: today's fallback
    decision, _ = apply_output({**grown, "max_tokens": 100_000}, anchored,
                               Limits.of_window(100_000, 4096, 1024))
    assert decision.value == 100_000 - anchored.tokens  # type: ignore[operator]  # the margin is not added twice


def test_cached_exact_counts_still_move_the_anchor() -> None:
    counter = TokenCounter(WordBackend())
    anchor = UsageAnchor()
    first, second = request(USER), request(USER, CALL, RESULT)
    counter.count_chat(second, anchor)
    counter.count_chat(first, anchor)
    counter.count_chat(second, anchor)  # a cache hit: the latest request is the anchor again
    assert counter.stats().cache_hits == 1
    assert anchor.estimate(second).tokens == counter.count_chat(second).tokens + DEFAULT_MARGIN_FLOOR_TOKENS  # type: ignore[operator, union-attr]


def test_no_tokenizer_at_all_anchors_on_provider_usage() -> None:
    counter = TokenCounter(RoughBackend(), fallback_margin_tokens=1024)
    anchor = UsageAnchor()
    first, grown = request(USER), request(USER, CALL, RESULT)
    before = counter.count_chat(first, anchor)
    assert before == TokenCount(estimate_chat_request(first) + 1024, False, "rough+margin", margin_tokens=1024)
    assert counting_mode(before) == "rough+margin"
    anchor.observe_exact(first, 700)  # the provider's usage.prompt_tokens of the request just sent
    after = counter.count_chat(grown, anchor)
    assert after.source == "anchored" and after.tokens == expected(700, 700 / rough(first["messages"]),
                                                                    appended(CALL, RESULT))
    assert after.fallback_reason is None and counter.breaker_state().state == "closed"


def test_an_inexact_backend_estimate_is_kept_and_a_broken_anchor_never_raises() -> None:
    class Framing(WordBackend):
        def _words(self, text):  # type: ignore[no-untyped-def]
            counted = super()._words(text)
            return TokenCount(counted.tokens + 3, False, "framing-estimate")

    class Broken(UsageAnchor):
        def estimate(self, request):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    anchor = UsageAnchor()
    anchor.observe_exact(request(USER), 900)
    kept = TokenCounter(Framing()).count_chat(request(USER, CALL), anchor)
    assert kept.source == "framing-estimate" and counting_mode(kept) == "estimate"
    broken = Broken()
    broken.observe_exact(request(USER), 900)
    fallback = TokenCounter(WordBackend(fail=CannotCount())).count_chat(request(USER), broken)
    assert fallback.source == "rough+margin"
    assert counting_mode(TokenCount(None, False, "unknown")) == "unknown"


def _circular() -> dict:
    message: dict = {"role": "user", "content": "hi"}
    message["self"] = message
    return message


UNREADABLE = {  # what an anchor cannot fingerprint: no chat request, or not JSON
    "not-a-mapping": ["nope"],
    "no-messages": {"model": "m"},
    "messages-a-string": {"messages": "hi"},
    "messages-bytes": {"messages": b"hi"},
    "messages-a-number": {"messages": 3},
    "object-in-a-message": {"messages": [{"role": "user", "content": object()}]},
    "set-in-the-frame": {"messages": [USER], "tools": {"a"}},
    "bytes-in-a-message": {"messages": [{"role": "user", "content": b"raw"}]},
    "nan-in-a-message": {"messages": [{"role": "user", "content": float("nan")}]},
    "circular-message": {"messages": [_circular()]},
    "mixed-key-types": {"messages": [{"role": "user", 1: "x"}]},
    "int-over-the-digit-limit": {"messages": [{"role": "user", "content": 10 ** 5000}]},
}


@pytest.mark.parametrize("unreadable", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_request_is_not_estimated(unreadable: object) -> None:
    anchor = UsageAnchor()
    anchor.observe_exact(request(USER), 900)
    assert anchor.estimate(unreadable) is None  # type: ignore[arg-type]
    anchor.observe_exact(unreadable, 900)  # type: ignore[arg-type]
    assert anchor.estimate(request(USER)) is not None  # an unreadable observation is skipped, the anchor stays


ODD_BUT_JSON = {  # JSON chat requests of shapes the rough estimates must read without raising
    "message-a-string": {"messages": ["hello"]},
    "message-a-number": {"messages": [SYSTEM, 42]},
    "content-parts-not-objects": {"messages": [{"role": "user", "content": ["a", 1, None]}]},
    "part-without-type": {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    "image-without-source": {"messages": [{"role": "user", "content": [{"type": "image"}]}]},
    "image-url-not-a-data-url": {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": 5}}]}]},
    "document-not-base64": {"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "data": "é not base64"}}]}]},
    "file-not-an-object": {"messages": [{"role": "user", "content": [{"type": "file", "file": "x"}]}]},
    "multimodal-wrapper-without-content": {"messages": [{"role": "user", "content": {"_multimodal": True}}]},
    "tools-entries-not-objects": {"messages": [USER], "tools": ["x", 1, {"function": "not an object"}]},
    "tools-an-object": {"messages": [USER], "tools": {"name": "x"}},
}


@pytest.mark.parametrize("odd", ODD_BUT_JSON.values(), ids=ODD_BUT_JSON.keys())
def test_an_odd_json_request_is_estimated(odd: dict) -> None:
    anchor = UsageAnchor()
    anchor.observe_exact(request(USER), 900)
    estimate = anchor.estimate(odd)
    assert estimate is not None and estimate.tokens >= DEFAULT_MARGIN_FLOOR_TOKENS
    anchor.observe_exact(odd, 900)
    assert anchor.estimate(odd) is not None
