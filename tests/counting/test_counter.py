from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.rough import RoughBackend, estimate_chat_request
from conversations import conversation

SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


class WordBackend(TokenizerBackend):
    """A real (if simple) exact tokenizer: whitespace words. Records calls; can be told to fail."""

    def __init__(self, fail: BaseException | None = None, result: object = "words", max_model_len: int | None = None):
        self.calls = 0
        self.fail = fail
        self.result = result
        self._max_model_len = max_model_len
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    @property
    def source(self) -> str:
        return "words"

    def _words(self, text: Callable[[], str]) -> TokenCount:
        self.calls += 1
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail is not None:
            raise self.fail
        if self.result != "words":
            return self.result  # type: ignore[return-value]
        return TokenCount(len(text().split()), True, self.source, self._max_model_len)

    def count_chat(self, request: ChatRequest) -> TokenCount:
        return self._words(lambda: " ".join(str(m.get("content") or "") for m in request["messages"]))

    def count_text(self, text: str) -> TokenCount:
        return self._words(lambda: text)


REQUEST = {"messages": [{"role": "user", "content": "count these four words"}]}


def test_exact_count_passes_through_and_is_cached() -> None:
    backend = WordBackend(max_model_len=32768)
    counter = TokenCounter(backend)
    first = counter.count_chat(REQUEST)
    again = counter.count_chat({"messages": [{"role": "user", "content": "count these four words"}]})  # a copy
    assert first == again == TokenCount(4, True, "words", 32768)
    assert backend.calls == 1
    stats = counter.stats()
    assert (stats.calls, stats.cache_hits, stats.backend_calls, stats.fallbacks) == (2, 1, 1, 0)
    # Messages equal as values share a key (a message's keys in another order: templates read them by name);
    # different content never shares a key.
    reordered = counter.count_chat({"messages": [{"content": "count these four words", "role": "user"}]})
    assert reordered == first and backend.calls == 1
    assert counter.count_chat({"messages": [{"role": "user", "content": "count these five words now"}]}).tokens == 5
    assert stats.last_max_model_len == 32768


def test_text_and_chat_caches_do_not_collide() -> None:
    backend = WordBackend()
    counter = TokenCounter(backend)
    assert counter.count_text("a b c").tokens == 3
    assert counter.count_chat({"messages": [{"role": "user", "content": "a b c"}]}).tokens == 3
    assert backend.calls == 2


def test_cache_is_bounded_lru() -> None:
    backend = WordBackend()
    counter = TokenCounter(backend, cache_size=2)
    for text in ("a", "b", "a", "c", "a", "b"):
        counter.count_text(text)
    # a miss, b miss, a hit, c miss (evicts b), a hit, b miss
    assert backend.calls == 4


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(CannotCount("server said no"), "words: CannotCount: server said no"),
     (RuntimeError("boom"), "words: RuntimeError"), (KeyError("count"), "words: KeyError")],
)
def test_failure_falls_back_to_rough_plus_margin_and_is_not_cached(failure: BaseException, reason: str) -> None:
    backend = WordBackend(fail=failure)
    now = [0.0]
    counter = TokenCounter(backend, fallback_margin_tokens=1000, cool_off_seconds=30, clock=lambda: now[0])
    request = conversation(3)
    result = counter.count_chat(request)
    assert result == TokenCount(estimate_chat_request(request) + 1000, False, "rough+margin", None, reason, 1000)
    now[0] = 30.0  # past the breaker's cool-off: the failure was not cached, the backend is asked again
    counter.count_chat(request)
    assert backend.calls == 2
    stats = counter.stats()
    assert stats.fallbacks == 2 and stats.last_fallback_reason == reason


@pytest.mark.parametrize(
    "bad", [None, 17, TokenCount(None, True, "words"), TokenCount(-1, True, "words"), TokenCount(True, True, "w"),
            TokenCount(3, "yes", "words"), TokenCount(3, True, "words", max_model_len="big")],  # type: ignore[arg-type]
)
def test_malformed_backend_results_fall_back(bad: object) -> None:
    # no cool-off: each count asks the backend again (a malformed answer opens the breaker: test_breaker.py)
    counter = TokenCounter(WordBackend(result=bad), fallback_margin_tokens=1000, cool_off_seconds=0)
    result = counter.count_text("one two three four five")
    assert result == TokenCount(6, False, "rough", None, "words: MalformedCount")  # ceil(23 / 4), no margin
    request = {"messages": [{"role": "user", "content": "one two"}]}
    assert counter.count_chat(request) == TokenCount(
        estimate_chat_request(request) + 1000, False, "rough+margin", None, "words: MalformedCount", 1000)


def test_both_failing_gives_unknown_and_never_raises() -> None:
    counter = TokenCounter(WordBackend(fail=CannotCount()))
    result = counter.count_chat({"messages": "not a list"})  # rough cannot read this either
    assert result.tokens is None and not result.known and result.source == "unknown"
    assert result.fallback_reason == "words: CannotCount"
    assert counter.count_text(b"bytes").tokens is None  # type: ignore[arg-type]
    assert counter.stats().unknown == 2


def test_non_json_request_is_counted_but_not_cached() -> None:
    backend = WordBackend()
    counter = TokenCounter(backend)
    request = {"messages": [{"role": "user", "content": "x y"}], "extra": object()}
    assert counter.count_chat(request).tokens == 2
    assert counter.count_chat(request).tokens == 2
    assert backend.calls == 2


def test_chosen_rough_backend_gets_the_margin_on_requests_not_on_text() -> None:
    counter = TokenCounter(RoughBackend(), fallback_margin_tokens=512)
    request = conversation(2)
    result = counter.count_chat(request)
    assert result == TokenCount(estimate_chat_request(request) + 512, False, "rough+margin", margin_tokens=512)
    assert counter.count_text("x" * 40) == TokenCount(10, False, "rough")


def test_clear_cache_epoch_stops_an_in_flight_reply_from_refilling() -> None:
    backend = WordBackend()
    backend.gate = threading.Event()
    counter = TokenCounter(backend)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(counter.count_text, "in flight")
        assert backend.entered.wait(5)
        counter.clear_cache()
        backend.gate.set()
        assert future.result(5).tokens == 2
    counter.count_text("in flight")
    assert backend.calls == 2  # the reply from before the clear was not cached


def test_concurrent_counts_are_consistent() -> None:
    backend = WordBackend()
    counter = TokenCounter(backend)
    texts = [f"w{i % 10} " * (i % 10 + 1) for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(counter.count_text, texts))
    assert [r.tokens for r in results] == [i % 10 + 1 for i in range(200)]
    stats = counter.stats()
    assert stats.calls == 200 and stats.cache_hits + stats.backend_calls == 200


def test_no_prompt_text_or_exception_message_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    request = {"messages": [{"role": "user", "content": f"my key is {SECRET}"}]}
    ok = TokenCounter(WordBackend())
    ok.count_chat(request)
    ok.count_text(f"key {SECRET}")
    failing = TokenCounter(WordBackend(fail=CannotCount(f"server echoed {SECRET}")))
    failing.count_chat(request)
    failing.count_text(f"key {SECRET}")
    unknown = TokenCounter(WordBackend(fail=ValueError(SECRET)))
    unknown.count_chat({"messages": SECRET})
    assert caplog.records, "the counter should log counts and fallbacks"
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert record.exc_info is None
    assert any("CannotCount" in r.getMessage() for r in caplog.records)


def test_only_a_cannot_count_message_reaches_the_reason_and_never_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    class ToolHistoryRefused(CannotCount):
        pass

    refused = TokenCounter(WordBackend(fail=ToolHistoryRefused("server cannot count tool-call histories")))
    assert refused.count_chat(REQUEST).fallback_reason == (
        "words: ToolHistoryRefused: server cannot count tool-call histories")
    assert refused.stats().last_fallback_reason == "words: ToolHistoryRefused: server cannot count tool-call histories"
    for failure in (RuntimeError(f"upstream said {SECRET}"), OSError(2, SECRET), ValueError(SECRET)):
        counter = TokenCounter(WordBackend(fail=failure), cool_off_seconds=0)  # every call reaches the backend
        chat, text = counter.count_chat(REQUEST), counter.count_text("x y")
        unknown = counter.count_chat({"messages": SECRET})
        for reason in (chat.fallback_reason, text.fallback_reason, unknown.fallback_reason,
                       counter.stats().last_fallback_reason):
            assert reason == f"words: {type(failure).__name__}"
    assert all("tool-call histories" not in r.getMessage() and SECRET not in r.getMessage() for r in caplog.records)
    assert any("ToolHistoryRefused" in r.getMessage() for r in caplog.records)


def test_backend_source_failure_does_not_break_the_counter() -> None:
    class NoSource(WordBackend):
        @property
        def source(self) -> str:
            raise RuntimeError("nope")

    counter = TokenCounter(NoSource(fail=CannotCount()))
    assert counter.source == "unknown-backend"
    assert counter.count_text("abc").fallback_reason == "unknown-backend: CannotCount"


def test_failing_backend_housekeeping_is_logged_by_type_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Sloppy(WordBackend):
        def clear_cache(self) -> None:
            raise OSError(f"cache dir holds {SECRET}")

        def close(self) -> None:
            raise RuntimeError(SECRET)

    counter = TokenCounter(Sloppy())
    assert counter.count_text("a b").tokens == 2
    counter.clear_cache()
    counter.close()
    messages = [r.getMessage() for r in caplog.records]
    assert "backend clear_cache failed type=OSError" in messages and "backend close failed type=RuntimeError" in messages
    assert not any(SECRET in m for m in messages)
    counter.count_text("a b")
    assert counter.stats().backend_calls == 2  # the cache was cleared despite the failure


def test_invalid_construction_is_rejected() -> None:
    with pytest.raises(ValueError, match="fallback_margin_tokens"):
        TokenCounter(RoughBackend(), fallback_margin_tokens=-1)
