"""Fault injection: every server failure becomes the documented fallback, within the timeout."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from baton_engine.tokens.contract import CannotCount, TokenizerConfig
from baton_engine.tokens.counter import FALLBACK_SOURCE, TokenCounter
from baton_engine.tokens.rough import estimate_chat_request
from baton_vllm import ToolCallHistoryUnsupported, VllmBackend
from batontest.faulty_servers import FaultyServer, elapsed, refused_url

REQUEST = {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "count me please"}]}
MARGIN = 512
SLACK = 2.5  # scheduling slack on a loaded 2-core machine (the slow fault lasts 10 s, the others longer)


def backend_for(url: str, timeout: float = 2.0, **config: object) -> VllmBackend:
    return VllmBackend(TokenizerConfig(url=url, timeout_seconds=timeout, **config))  # type: ignore[arg-type]


def assert_fallback(backend: VllmBackend, request: dict = REQUEST) -> None:
    """Through the counter: rough + margin, not exact, reason names the backend and the error type only."""
    counter = TokenCounter(backend, fallback_margin_tokens=MARGIN)
    result = counter.count_chat(request)
    assert result.exact is False
    assert result.source == FALLBACK_SOURCE
    assert result.tokens == estimate_chat_request(request) + MARGIN
    assert result.fallback_reason is not None and result.fallback_reason.startswith(backend.source + ": ")


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("status_500", "HTTP 500"),
        ("status_400", "HTTP 400"),
        ("not_json", "not JSON"),
        ("json_array", "not a JSON object"),
        ("count_string", "invalid 'count'"),
        ("count_bool", "invalid 'count'"),
        ("count_negative", "invalid 'count'"),
        ("max_model_len_missing", "invalid 'max_model_len'"),
        ("reset", "vLLM server request failed"),
    ],
)
def test_bad_replies_are_cannot_count_and_fall_back(fault: str, reason: str) -> None:
    with FaultyServer(fault) as server:  # type: ignore[arg-type]
        backend = backend_for(server.url)
        with pytest.raises(CannotCount, match=reason) as caught:
            backend.count_chat(REQUEST)
        assert server.url not in str(caught.value)
        assert_fallback(backend)
        backend.close()


def test_connection_refused_falls_back_fast() -> None:
    backend = backend_for(refused_url(), timeout=1.0)
    start = time.monotonic()
    with pytest.raises(CannotCount, match="unreachable"):
        backend.count_text("hello")
    assert elapsed(start) < 1.0 + SLACK
    assert_fallback(backend)


@pytest.mark.parametrize(("fault", "delay"), [("hang", 0.0), ("ok", 10.0), ("dribble", 0.2)])
def test_nothing_blocks_longer_than_the_timeout(fault: str, delay: float) -> None:
    """A silent server, a slow one and one that dribbles bytes (each under httpx's read timeout)."""
    timeout = 0.6
    with FaultyServer(fault, delay=delay) as server:  # type: ignore[arg-type]
        backend = backend_for(server.url, timeout=timeout)
        start = time.monotonic()
        with pytest.raises(CannotCount, match="did not answer within 0.6 s|timed out"):
            backend.count_chat(REQUEST)
        assert elapsed(start) < timeout + SLACK
        start = time.monotonic()
        assert_fallback(backend)
        assert elapsed(start) < timeout + SLACK
        backend.close()


def test_slow_server_within_timeout_counts_exactly_for_concurrent_callers() -> None:
    with FaultyServer("ok", delay=0.3, count=11) as server:
        backend = backend_for(server.url, timeout=5.0)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: backend.count_chat(REQUEST), range(8)))
        assert {(r.tokens, r.exact) for r in results} == {(11, True)}
        assert server.requests_received == 8
        backend.close()


def test_slow_server_under_concurrent_callers_falls_back_within_the_timeout() -> None:
    """More callers than the backend's workers: queued callers are bounded by the same deadline."""
    timeout = 0.5
    with FaultyServer("ok", delay=10.0) as server:
        backend = backend_for(server.url, timeout=timeout)
        counter = TokenCounter(backend, fallback_margin_tokens=MARGIN)
        durations: list[float] = []
        lock = threading.Lock()

        def call(i: int) -> object:
            start = time.monotonic()
            result = counter.count_chat({"messages": [{"role": "user", "content": f"caller {i}"}]})
            with lock:
                durations.append(elapsed(start))
            return result

        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(call, range(16)))
        assert all(r.exact is False and r.source == FALLBACK_SOURCE for r in results)
        assert max(durations) < timeout + SLACK
        backend.close()


def test_max_model_len_mismatch_keeps_exact_counts_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    with FaultyServer("ok", count=9, max_model_len=2048) as server:
        backend = backend_for(server.url, context_length=40960, api_key="sk-never-logged")
        with caplog.at_level(logging.WARNING, logger="baton_vllm"):
            first = backend.count_chat(REQUEST)
            second = backend.count_text("x")
        assert (first.tokens, first.exact, first.max_model_len) == (9, True, 2048)
        assert second.exact is True
        mismatch = backend.max_model_len_mismatch
        assert mismatch is not None and (mismatch.configured, mismatch.server, mismatch.effective) == (40960, 2048, 2048)
        warnings = [r for r in caplog.records if r.name == "baton_vllm"]
        assert len(warnings) == 1
        text = warnings[0].getMessage()
        assert "2048" in text and "40960" in text
        assert "127.0.0.1" not in text and "sk-never-logged" not in text
        backend.close()


def test_matching_max_model_len_is_not_a_mismatch() -> None:
    with FaultyServer("ok", max_model_len=40960) as server:
        backend = backend_for(server.url, context_length=40960)
        assert backend.count_text("x").max_model_len == 40960
        assert backend.max_model_len_mismatch is None
        assert backend.max_model_len == 40960
        backend.close()


def test_mistral_mode_tool_call_history_400_is_server_limit_not_bad_input(standin_mistral) -> None:
    backend = backend_for(standin_mistral.url, model=standin_mistral.model_name)
    history = {"messages": [
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "a.py"},
    ]}
    with pytest.raises(ToolCallHistoryUnsupported, match="server cannot count tool-call histories"):
        backend.count_chat(history)
    counter = TokenCounter(backend, fallback_margin_tokens=MARGIN)
    result = counter.count_chat(history)
    assert result.exact is False and "ToolCallHistoryUnsupported" in (result.fallback_reason or "")
    assert backend.count_chat(REQUEST).exact is True  # the same server still counts plain chats
    backend.close()


@pytest.fixture(scope="module")
def standin_mistral(qwen3_tokenizer_dir):
    from batontest.vllm_standin import VllmStandin

    with VllmStandin(qwen3_tokenizer_dir, mistral_tool_call_400=True) as server:
        yield server
