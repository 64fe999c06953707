"""Piecewise counting is exact: property tests against a cold full encode with real tokenizers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from batontest.threads import run_in_threads

from baton_engine.tokens.pieces import PieceCounter

from baton_hf.backend import HfBackend, _private_encoder, _split_tokens

QWEN_SPECIALS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>", "<|endoftext|>"]
WHITESPACE = [" ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "\u00a0", "\u3000"]



_reference_encoders: dict[int, Any] = {}


def reference_encoder(backend: HfBackend) -> Any:
    """A separate Rust tokenizer (not the backend's), built once per backend."""
    if id(backend) not in _reference_encoders:
        _reference_encoders[id(backend)] = _private_encoder(backend._tokenizer)
    return _reference_encoders[id(backend)]


def cold_count(backend: HfBackend, text: str) -> int:
    """A full encode of the whole string: no cache, no splitting."""
    return len(reference_encoder(backend).encode(text, add_special_tokens=False).ids)


def fresh_counter(backend: HfBackend, **limits: int) -> PieceCounter:
    """A new PieceCounter with an empty cache."""
    encoder = reference_encoder(backend)

    def count_batch(pieces: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in encoder.encode_batch(list(pieces), add_special_tokens=False)]

    return PieceCounter(count_batch, _split_tokens(encoder), **limits)


fragments = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(WHITESPACE),
    st.sampled_from(QWEN_SPECIALS + ["[INST]", "[/INST]", "[TOOL_CALLS]", "<s>", "</s>"]),
    st.sampled_from(["def f(x):\n    return x", '{"a": [1, 2]}', "héllo wörld", "数字123", "'s 're", "!!!"]),
)
texts = st.lists(fragments, max_size=20).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_random_text_with_special_tokens_and_whitespace_is_exact(qwen: HfBackend, nemo: HfBackend, text: str) -> None:
    for backend in (qwen, nemo):
        assert backend.count_text(text).tokens == cold_count(backend, text)


roles = st.sampled_from(["user", "assistant", "system", "tool"])
messages = st.lists(st.fixed_dictionaries({"role": roles, "content": texts}), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=messages, thinking=st.booleans())
def test_random_conversations_count_exactly_and_incrementally(qwen: HfBackend, conversation: list[dict[str, Any]], thinking: bool) -> None:
    request = {"messages": conversation, "chat_template_kwargs": {"enable_thinking": thinking}}
    rendered = qwen.render(request)
    assert qwen.count_chat(request).tokens == cold_count(qwen, rendered)
    grown = {**request, "messages": [*conversation, {"role": "user", "content": "and then?"}]}
    assert qwen.count_chat(grown).tokens == cold_count(qwen, qwen.render(grown))


def big_tool_conversation(size: int) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Tool number {i} does a thing.",
                "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]},
            },
        }
        for i in range(8)
    ]
    convo: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent.\n\n"}]
    while len(convo) < size:
        n = len(convo)
        convo.append({"role": "user", "content": f"Step {n}: please run   tool_{n % 8} on file_{n}.py\n"})
        convo.append(
            {
                "role": "assistant",
                "content": "" if n % 3 else f"<think>plan {n}</think>Running it.",
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": f"tool_{n % 8}", "arguments": json.dumps({"arg": f"file_{n}.py"})}}],
            }
        )
        convo.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"ok\n  line {n}\n\t\tindented <|im_end|> literal\n"})
        convo.append({"role": "assistant", "content": f"Done with step {n}.  "})
    return {"messages": convo[:size], "tools": tools}


def test_two_hundred_message_tool_conversation_is_exact_and_reuses_pieces(qwen: HfBackend) -> None:
    counter = fresh_counter(qwen)
    request = big_tool_conversation(200)
    rendered = qwen.render(request)
    assert counter.count(rendered) == cold_count(qwen, rendered) > 5000
    first_pass = counter.encoded_pieces
    grown = {**request, "messages": [*request["messages"], {"role": "user", "content": "Summarise."}]}
    rendered_grown = qwen.render(grown)
    assert counter.count(rendered_grown) == cold_count(qwen, rendered_grown)
    assert counter.encoded_pieces - first_pass <= 3
    assert first_pass > 100


@pytest.mark.parametrize(
    "text",
    [
        "<|im_end|>",
        " <|im_end|> ",
        "\n\n<|im_end|>\n\n",
        "a  <|im_start|>  b",
        "<|im_start|><|im_end|><|im_start|>",
        "trailing spaces   ",
        "   ",
        "<|im_end|>\n",
        "x<|im_end|x",  # an incomplete special token is plain text
        "<think>\n\n</think>\n\n",
    ],
)
def test_whitespace_edge_cases_around_special_tokens(qwen: HfBackend, text: str) -> None:
    assert fresh_counter(qwen).count(text) == cold_count(qwen, text)


def test_cache_is_bounded_by_entries_and_characters(qwen: HfBackend) -> None:
    counter = fresh_counter(qwen, max_entries=5, max_cached_chars=100)
    for i in range(20):
        counter.count(f"<|im_start|>piece {i}<|im_end|>")
    assert len(counter) == 5
    counter.count("x" * 500)  # larger than the character bound: counted, not cached
    assert len(counter) == 5 and counter.count("x" * 500) == cold_count(qwen, "x" * 500)
    counter.clear()
    assert len(counter) == 0


def test_concurrent_counting_shares_one_cache_safely(qwen: HfBackend) -> None:
    counter = fresh_counter(qwen, max_entries=64)
    request = big_tool_conversation(60)
    texts_ = [qwen.render({**request, "messages": request["messages"][: 10 + i]}) for i in range(20)]
    expected = [cold_count(qwen, t) for t in texts_]
    got: dict[int, int] = {}

    def work(i: int) -> None:
        for _ in range(3):
            got[i] = counter.count(texts_[i])

    run_in_threads(work, len(texts_))
    assert [got[i] for i in range(len(texts_))] == expected


def test_counter_without_split_tokens_encodes_whole_text(qwen: HfBackend) -> None:
    calls: list[list[str]] = []
    counter = PieceCounter(lambda pieces: calls.append(list(pieces)) or [len(p) for p in pieces], [])
    assert counter.count("a<|im_end|>b") == len("a<|im_end|>b")
    assert counter.count("") == 0
    assert calls == [["a<|im_end|>b"]]


def test_count_all_equals_the_sum_of_separate_counts_with_one_batch(qwen: HfBackend) -> None:
    texts = ["<|im_start|>user\nhi there<|im_end|>", "", "plain text  ", "<|im_start|>user\nhi there<|im_end|>",
             "数字123 <think>x</think>"]
    separate = fresh_counter(qwen)
    expected = sum(separate.count(text) for text in texts)
    assert expected == sum(cold_count(qwen, text) for text in texts)
    batches: list[list[str]] = []
    encoder = reference_encoder(qwen)

    def count_batch(pieces: Sequence[str]) -> list[int]:
        batches.append(list(pieces))
        return [len(e.ids) for e in encoder.encode_batch(list(pieces), add_special_tokens=False)]

    together = PieceCounter(count_batch, _split_tokens(encoder))
    assert together.count_all(texts) == expected
    assert len(batches) == 1 and len(batches[0]) == len(set(batches[0]))  # each new piece encoded once
    assert together.count_all(texts) == expected and len(batches) == 1  # all from the cache now


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, cut=st.integers(0, 400))
def test_prefix_counts_and_clean_seams_are_exact(qwen: HfBackend, nemo: HfBackend, text: str, cut: int) -> None:
    """spans() gives the exact count of every prefix ending at a piece start; wherever seam_is_clean says so,
    counting the two sides apart equals counting the whole."""
    for backend in (qwen, nemo):
        counter = fresh_counter(backend)
        starts, before, total = counter.spans(text)
        assert total == cold_count(backend, text)
        for start, count in zip(starts, before):
            assert count == cold_count(backend, text[:start])
        at = min(cut, len(text))
        reach = counter.max_token_length
        if counter.seam_is_clean(text[max(0, at - reach):at], text[at:at + reach]):
            assert counter.count(text[:at]) + counter.count(text[at:]) == cold_count(backend, text)
        for seam in counter.token_starts(text, 0, len(text)):
            assert any(text.startswith(token, seam) for token in counter.split_tokens)


def test_a_seam_inside_an_overlapping_token_is_not_clean() -> None:
    counter = PieceCounter(lambda pieces: [len(p) for p in pieces], ["ab", "bc"])
    assert counter.seam_is_clean("x", "bcd")
    assert not counter.seam_is_clean("xa", "bcd")  # "ab" straddles the seam: the splitter may match it first
    assert not counter.seam_is_clean("x", "cd")  # no split token starts at the seam: BPE could merge across it
    assert counter.seam_is_clean("", "cd") and counter.seam_is_clean("xa", "")
