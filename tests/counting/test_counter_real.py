"""The counter over real backends: the hf backend with Qwen3, and the vllm backend against the loopback stand-in."""

from __future__ import annotations

import pytest

from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend
from baton_engine.tokens.rough import estimate_chat_request, request_margin
from conversations import conversation

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def qwen3() -> str:
    from batontest.assets import qwen3_dir

    return str(qwen3_dir())


def test_hf_counts_are_exact_and_cached(qwen3: str) -> None:
    pytest.importorskip("baton_hf")
    backend, selection = build_backend(TokenizerConfig(path=qwen3, model="Qwen/Qwen3-8B"))
    assert selection.name == "hf" and selection.reason == "auto: a tokenizer path/id is set"
    counter = TokenCounter(backend)
    small, large = conversation(2), conversation(30)
    first, bigger = counter.count_chat(small), counter.count_chat(large)
    assert first.exact and first.source == backend.source and 0 < first.tokens < bigger.tokens
    assert counter.count_chat(small) == first
    stats = counter.stats()
    assert (stats.calls, stats.cache_hits, stats.backend_calls, stats.fallbacks) == (3, 1, 2, 0)


def test_vllm_one_round_trip_per_request_then_fallback_when_the_server_is_gone(qwen3: str) -> None:
    pytest.importorskip("baton_vllm")
    from batontest.vllm_standin import VllmStandin

    request, other = conversation(5, seed=1), conversation(6, seed=2)
    with VllmStandin(qwen3) as server:
        backend, selection = build_backend(TokenizerConfig(url=server.url, model=server.model_name,
                                                           timeout_seconds=5))
        assert selection.name == "vllm"
        counter = TokenCounter(backend, fallback_margin_tokens=100)
        before = server.requests_received["/tokenize"]
        exact = counter.count_chat(request)
        assert server.requests_received["/tokenize"] - before == 1
        assert counter.count_chat(request) == exact
        assert server.requests_received["/tokenize"] - before == 1  # a repeat costs no round trip
        assert exact.exact and exact.max_model_len == server.max_model_len
    counter.close()  # drop the keep-alive connection, whose handler thread outlives the server
    fallback = counter.count_chat(other)  # server stopped
    assert not fallback.exact and fallback.source == "rough+margin"
    assert fallback.tokens == estimate_chat_request(other) + request_margin(other, estimate_chat_request(other), 100)
    assert fallback.fallback_reason and fallback.fallback_reason.startswith("vllm")
    assert counter.count_chat(request) == exact  # exact counts stay cached
    assert counter.stats().last_max_model_len == exact.max_model_len
