"""Reclamation's core (``compaction/pruning.py``, ``prompt_cache.py``): what may be pruned, what never is, the stubs,
and the cost model's choice of a cut. No host: a transcript of chat messages and a counter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from baton_engine.compaction.pruning import apply, candidates, reclaim, with_media
from baton_engine.messages.entry import ref_for
from baton_engine.messages.markers import PRUNED_PREFIX, is_own_text
from baton_engine.prompt_cache import CacheBook, Cut, choose_cut, horizon_requests
from baton_engine.tokens.verify import cached_prompt_tokens, reported_prompt_tokens

from batontest.validators import chat_errors


# A message's tokens as the engine's estimate makes them: its text by size, each image at its own cost.
cost_of = with_media(lambda message: max(len(json.dumps(message)) // 4, 1))


def count(messages: list[Any]) -> tuple[int, bool]:
    return sum(cost_of(m) for m in messages), True


def read(call: str, path: str, body: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]},
            {"role": "tool", "tool_call_id": call, "content": body, "_persisted": True}]


def session(rounds: int = 6, body_lines: int = 200) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the parser."}]
    for n in range(rounds):
        messages += read(f"c{n}", f"src/m{n}.py", f"line {n}: value = {n}\n" * body_lines)
        messages.append({"role": "assistant", "content": f"Read m{n}."})
        messages.append({"role": "user", "content": f"Continue with m{n + 1}."})
    messages += read("c_last", "src/last.py", "x = 1\n" * body_lines)  # the newest call: not answered yet
    return messages


def test_answered_results_outside_the_tail_become_stubs_with_their_ref() -> None:
    messages = session()
    found = candidates(messages, tail_tokens=2000, cost_of=cost_of, min_result_tokens=256, min_argument_tokens=1024)
    pruned_indexes = {c.index for c in found}
    assert pruned_indexes, "old answered reads are candidates"
    for candidate in found:
        original = messages[candidate.index]
        assert original["role"] == "tool"
        stub = candidate.replacement["content"]
        assert stub.startswith(PRUNED_PREFIX) and is_own_text(stub)
        assert f"ref={ref_for(original)}" in stub and "read_file" in stub and "baton_recall" in stub
        assert candidate.replacement["_persisted"] is True  # the host's bookkeeping keys kept
        assert candidate.replacement["tool_call_id"] == original["tool_call_id"]
        assert candidate.recalled[-1] is original and candidate.recalled[0]["tool_calls"]
    # never touched: the unanswered result, the newest answered rounds within the tail, the latest user request
    last = len(messages) - 1
    assert last not in pruned_indexes
    assert max(pruned_indexes) < len(messages) - 6
    after = apply(messages, found)
    assert after is not messages and len(after) == len(messages)
    assert chat_errors({"model": "m", "messages": after}) == []
    assert all(after[i] is messages[i] for i in range(len(messages)) if i not in pruned_indexes)


def test_the_latest_user_request_is_never_pruned_even_outside_the_tail() -> None:
    messages = session(rounds=3)
    request = {"role": "user", "content": [{"type": "text", "text": "Look at this."},
                                           {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    messages.insert(len(messages) - 2, request)
    found = candidates(messages, tail_tokens=1, cost_of=cost_of, min_result_tokens=1, min_argument_tokens=1)
    assert messages.index(request) not in {c.index for c in found}


def test_a_byte_identical_repeat_below_the_least_result_is_pruned_and_the_newest_copy_stays() -> None:
    small = "FAILED tests/test_parser.py::test_nested - AssertionError: expected 3, got 2\n" * 12
    messages = [{"role": "user", "content": "Run the tests twice."}, *read("a", "t.log", small),
                {"role": "assistant", "content": "Again."}, *read("b", "t.log", small),
                {"role": "assistant", "content": "Same."}, {"role": "user", "content": "Thanks."}]
    found = candidates(messages, tail_tokens=0, cost_of=cost_of, min_result_tokens=10_000, min_argument_tokens=10_000)
    repeats = [c for c in found if c.kind == "repeat"]
    assert [c.index for c in repeats] == [2]  # the older copy; the newer (index 5) stays whole
    assert "repeat" in repeats[0].replacement["content"]


def test_oversized_arguments_become_stubs_and_stay_a_json_object_of_the_same_keys() -> None:
    big = "def f():\n    return 1\n" * 400
    write = {"role": "assistant", "content": None, "tool_calls": [{"id": "w", "type": "function", "function": {
        "name": "write_file", "arguments": json.dumps({"path": "src/big.py", "text": big})}}]}
    messages = [{"role": "user", "content": "Write it."}, write, {"role": "tool", "tool_call_id": "w",
                                                                  "content": "written"},
                {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Next."}]
    found = candidates(messages, tail_tokens=0, cost_of=cost_of, min_result_tokens=10_000, min_argument_tokens=500)
    (candidate,) = [c for c in found if c.kind == "arguments"]
    arguments = json.loads(candidate.replacement["tool_calls"][0]["function"]["arguments"])
    assert arguments["path"] == "src/big.py" and arguments["text"].startswith(PRUNED_PREFIX)
    assert f"ref={ref_for(write)}" in arguments["text"] and candidate.saved > 1000


def test_an_old_image_is_retired_to_a_text_part() -> None:
    shot = {"role": "user", "content": [{"type": "text", "text": "Here is the screen."},
                                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    messages = [shot, {"role": "assistant", "content": "I see it."}, {"role": "user", "content": "Now fix it."}]
    found = candidates(messages, tail_tokens=0, cost_of=cost_of, min_result_tokens=10_000, min_argument_tokens=10_000)
    (candidate,) = found
    assert candidate.kind == "image" and candidate.index == 0
    parts = candidate.replacement["content"]
    assert parts[0] == shot["content"][0] and parts[1]["type"] == "text" and PRUNED_PREFIX in parts[1]["text"]


def test_stubs_and_baton_s_own_results_are_never_candidates_again() -> None:
    messages = session()
    first = apply(messages, candidates(messages, tail_tokens=2000, cost_of=cost_of, min_result_tokens=256,
                                       min_argument_tokens=1024))
    assert candidates(first, tail_tokens=2000, cost_of=cost_of, min_result_tokens=256, min_argument_tokens=1024) == []
    recall = [{"role": "user", "content": "Find it."}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "r", "type": "function", "function": {"name": "baton_recall", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "r", "content": "page " * 2000},
              {"role": "assistant", "content": "Found."}, {"role": "user", "content": "Good."}]
    assert candidates(recall, tail_tokens=0, cost_of=cost_of, min_result_tokens=1, min_argument_tokens=1) == []


def test_reclaim_counts_the_pruned_list_and_reports_the_exact_difference() -> None:
    messages = session(rounds=10)
    before = count(messages)[0]
    decided = reclaim(messages, before=before, count=count, cost_of=cost_of, tail_tokens=2000, min_reclaim=1000,
                      min_result_tokens=256, min_argument_tokens=1024, horizon=50, ratio=0.1, hit=1.0)
    assert decided.messages is not None and decided.verdict.reason == "pays"
    assert decided.reclaimed == before - count(decided.messages)[0] > 1000 and decided.exact


@pytest.mark.parametrize(("horizon", "reason"), [(0, "cache_cost"), (0.5, "cache_cost")])
def test_a_prune_that_cannot_pay_for_the_cache_it_breaks_is_declined(horizon: float, reason: str) -> None:
    messages = session(rounds=10)
    before = count(messages)[0]
    decided = reclaim(messages, before=before, count=count, cost_of=cost_of, tail_tokens=2000, min_reclaim=1000,
                      min_result_tokens=256, min_argument_tokens=1024, horizon=horizon, ratio=0.1, hit=1.0)
    assert decided.messages is None and decided.verdict.reason == reason


def test_below_the_least_reclaim_nothing_commits() -> None:
    messages = session(rounds=10)
    decided = reclaim(messages, before=count(messages)[0], count=count, cost_of=cost_of, tail_tokens=2000,
                      min_reclaim=10**9, min_result_tokens=256, min_argument_tokens=1024, horizon=100, ratio=0.1,
                      hit=1.0)
    assert decided.messages is None and decided.verdict.reason == "below_min_reclaim"


def test_the_cost_model_prefers_the_cut_that_keeps_the_longer_prefix_when_the_older_part_is_not_worth_it() -> None:
    old = Cut(first=10, kept_prefix=1_000, suffix=90_000, reclaimed=12_000)  # a small old result breaks a lot
    late = Cut(first=80, kept_prefix=80_000, suffix=11_000, reclaimed=10_000)
    verdict = choose_cut([old, late], min_reclaim=4096, horizon=20, ratio=0.1, hit=1.0)
    assert verdict.cut == late
    assert verdict.net == pytest.approx(10_000 * 0.1 * 20 - 11_000 * 0.9)
    # a route without a cache (hit 0) loses nothing by a break: the larger reclaim wins
    assert choose_cut([old, late], min_reclaim=4096, horizon=20, ratio=0.1, hit=0.0).cut == old
    # too few requests left to pay for either re-read
    assert choose_cut([old, late], min_reclaim=4096, horizon=5, ratio=0.1, hit=1.0).reason == "cache_cost"


def test_the_horizon_is_the_requests_left_before_the_trigger() -> None:
    assert horizon_requests(60_000, 96_000, 1_200) == 30
    assert horizon_requests(100_000, 96_000, 1_200) == 0
    assert horizon_requests(60_000, 96_000, None) == 0


def test_cache_reads_are_read_from_every_usage_shape_and_counted_in_the_prompt() -> None:
    openai = {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 768}}
    responses = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 512}}
    anthropic = {"input_tokens": 40, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 60}
    hermes = {"prompt_tokens": 1000, "input_tokens": 100, "cache_read_tokens": 880, "cache_write_tokens": 20}
    assert [cached_prompt_tokens(u) for u in (openai, responses, anthropic, hermes)] == [768, 512, 900, 880]
    # Anthropic's input_tokens excludes cache reads and writes: the prompt is all three
    assert [reported_prompt_tokens(u) for u in (openai, responses, anthropic, hermes)] == [1000] * 4
    assert cached_prompt_tokens({"prompt_tokens": 1000}) is None  # a route that does not say


def test_the_cache_book_keeps_sent_cached_and_uncached_apart() -> None:
    book = CacheBook()
    assert book.hit_share() == 1.0  # never reported: assume the route caches (a break is never free)
    book.observe(1000, 900)
    book.observe(1200, None)
    book.observe(1300, 1000, written=300)
    assert (book.prompt_tokens, book.cache_read_tokens, book.uncached_tokens) == (3500, 1900, 1600)
    assert book.cache_reported == 2 and book.hit_share() == pytest.approx((0.9 + 1000 / 1300) / 2)
    book.sized(10_000)
    book.sized(11_000)
    book.sized(13_000)
    assert book.growth() == 1500
    book.committed(5000, exact=True)
    book.declined["cache_cost"] += 1
    summary = book.summary()
    assert summary["reclaimed_tokens"] == 5000 and summary["prunes_committed"] == 1
    assert summary["prunes_declined"] == {"cache_cost": 1} and summary["uncached_prompt_tokens"] == 1600


def test_a_pruned_result_keeps_what_it_stated_and_a_later_brief_still_sees_it() -> None:
    from baton_engine.compaction.anchors import anchor_facts
    from baton_engine.messages.entry import message_key

    env = "\n".join(["# the service's settings", "S3_BUCKET=acme-ml-artifacts  # models and eval reports only, "
                     "no raw PII", *(f"OPTION_{n}=value-{n}" for n in range(300))])
    messages = [{"role": "user", "content": "Read the env file."}, *read("e", ".env.example", env),
                {"role": "assistant", "content": "Read it."}, {"role": "user", "content": "Now deploy."}]
    (candidate,) = candidates(messages, tail_tokens=0, cost_of=cost_of, min_result_tokens=256,
                              min_argument_tokens=10_000)
    stub = candidate.replacement["content"]
    assert stub.splitlines()[1:] == ["S3_BUCKET=acme-ml-artifacts  # models and eval reports only, no raw PII"]
    facts = anchor_facts(message_key(candidate.replacement))
    assert facts.result is not None and facts.result.stated == tuple(stub.splitlines()[1:])
