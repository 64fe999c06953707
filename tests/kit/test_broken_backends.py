"""Each deliberately broken backend fails exactly the check that names its flaw, with that check's message.

``Words`` is a small correct backend; every broken one changes one thing. The first test shows ``Words``
passes, so a failure below comes from the flaw and not from the base.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from baton_engine.testing import assert_conformant, run_checks
from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _render(request: Any) -> str:
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list):
        raise CannotCount("request.messages must be a list")
    parts = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise CannotCount(f"messages[{index}] must be an object with a string 'role'")
        parts.append(f"{message['role']} {message.get('content') or ''} {message.get('tool_calls') or ''}")
    parts += [str(tool) for tool in request.get("tools") or ()]
    return "\n".join(parts)


class Words(TokenizerBackend):
    """Correct: words and punctuation, stateless."""

    @property
    def source(self) -> str:
        return "words:test"

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(len(_TOKEN.findall(text)), True, self.source)

    def count_chat(self, request: ChatRequest) -> TokenCount:
        return TokenCount(len(_TOKEN.findall(_render(request))), True, self.source)


class UnsafeSource(Words):
    def __init__(self, source: str) -> None:
        self._source = source

    @property
    def source(self) -> str:
        return self._source


class DishonestExact(Words):
    """chars/4 labelled exact."""

    def count_text(self, text: str) -> TokenCount:
        return TokenCount((len(text) + 3) // 4, True, self.source)

    def count_chat(self, request: ChatRequest) -> TokenCount:
        return TokenCount((len(_render(request)) + 3) // 4, True, self.source)


class OffByOne(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        return TokenCount(super().count_chat(request).tokens + 1, True, self.source)


class HoldsALock(Words):
    def __init__(self) -> None:
        self._lock = threading.Lock()


class CopyCountsDifferently(Words):
    def __init__(self, offset: int = 0) -> None:
        self._offset = offset

    def __deepcopy__(self, memo: dict[int, Any]) -> CopyCountsDifferently:
        return CopyCountsDifferently(self._offset + 1)

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(super().count_text(text).tokens + self._offset, True, self.source)


class ThreadUnsafe(Words):
    """Counts into an instance attribute and yields in between: threads add into each other's tally."""

    def count_text(self, text: str) -> TokenCount:
        self._tally = 0
        time.sleep(0.0005)
        self._tally += len(_TOKEN.findall(text))
        time.sleep(0.0005)
        return TokenCount(self._tally, True, self.source)


class LeaksPromptText(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        try:
            return super().count_chat(request)
        except CannotCount:
            raise CannotCount(f"cannot count {request!r}") from None


class LogsPromptText(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        try:
            return super().count_chat(request)
        except CannotCount:
            import logging

            logging.getLogger("some_backend").debug("bad request %r", request)
            raise


class RaisesValueError(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        try:
            return super().count_chat(request)
        except CannotCount:
            raise ValueError("bad request") from None


class ExactCountOfJunk(Words):
    """Answers malformed requests with an exact-looking 0 instead of raising."""

    def count_chat(self, request: ChatRequest) -> TokenCount:
        try:
            return super().count_chat(request)
        except CannotCount:
            return TokenCount(0, True, self.source)


class CrashesOnToolCalls(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        if any(isinstance(m, Mapping) and m.get("tool_calls") for m in request.get("messages") or ()):
            raise KeyError("tool_calls")
        return super().count_chat(request)


class ReturnsAnInt(Words):
    def count_text(self, text: str) -> TokenCount:
        return len(_TOKEN.findall(text))  # type: ignore[return-value]


class WindowIsAString(Words):
    @property
    def max_model_len(self) -> int | None:
        return "32k"  # type: ignore[return-value]


class MutatesTheRequest(Words):
    def count_chat(self, request: ChatRequest) -> TokenCount:
        count = super().count_chat(request)
        request.pop("tools", None)  # type: ignore[attr-defined]
        return count


class ClearCacheOnce(Words):
    def __init__(self) -> None:
        self._cache: dict[str, int] | None = {}

    def clear_cache(self) -> None:
        self._cache.clear()  # type: ignore[union-attr]
        self._cache = None


class CloseOnce(Words):
    def __init__(self) -> None:
        self._closed = False

    def close(self) -> None:
        if self._closed:
            raise RuntimeError("already closed")
        self._closed = True


class BrokenAfterClose(CloseOnce):
    def close(self) -> None:
        self._closed = True

    def count_chat(self, request: ChatRequest) -> TokenCount:
        if self._closed:
            raise RuntimeError("closed")
        return super().count_chat(request)


def test_the_correct_base_passes_every_check() -> None:
    report = assert_conformant(Words(), reference=Words())
    assert report.check("agreement").status == "pass"
    assert report.check("speed").status == "info" and report.speed["chat_tokens_per_second"] > 0


BROKEN = [
    ("source-url-credentials", lambda: UnsafeSource("mytok:http://user:pw@host:8000"), None, "source",
     "source contains a URL with credentials"),
    ("source-query", lambda: UnsafeSource("mytok:http://host/?key=k"), None, "source",
     "source contains a URL with a query string"),
    ("source-whitespace", lambda: UnsafeSource("my tok"), None, "source", "whitespace or control characters"),
    ("source-control", lambda: UnsafeSource("mytok\x1b[31m"), None, "source", "whitespace or control characters"),
    ("source-empty", lambda: UnsafeSource(""), None, "source", "source is str (empty)"),
    ("source-too-long", lambda: UnsafeSource("m" * 121), None, "source", "121 characters long (at most 120)"),
    ("dishonest-exact", DishonestExact, None, "honest-exact", "says exact=True but gives 16 tokens for each of 5"),
    ("disagrees-with-reference", OffByOne, Words, "agreement",
     "exact counts differ from words:test on 9 of 14 corpus items (chat:plain"),
    ("deepcopy-fails", HoldsALock, None, "deepcopy", "copy.deepcopy raised TypeError"),
    ("copy-counts-differently", CopyCountsDifferently, None, "deepcopy", "the copy counts differently on 5 corpus"),
    ("thread-unsafe", ThreadUnsafe, None, "threads", "counts from 8 threads differ from serial counts"),
    ("leaks-prompt-in-error", LeaksPromptText, None, "errors", "(messages is a string) quotes the request text"),
    ("leaks-prompt-in-log", LogsPromptText, None, "errors", "a log record quotes the request text"),
    ("raises-non-cannotcount", RaisesValueError, None, "errors",
     "count_chat raised ValueError for a malformed request (messages is a string)"),
    ("exact-count-of-junk", ExactCountOfJunk, None, "errors", "returned an exact count for a malformed request"),
    ("crashes-on-corpus", CrashesOnToolCalls, None, "results",
     "count_chat raised KeyError on corpus item 'tool-call'"),
    ("returns-an-int", ReturnsAnInt, None, "results", "count_text returned int, not a TokenCount"),
    ("max-model-len-not-an-int", WindowIsAString, None, "results", "max_model_len is str, not None or an int > 0"),
    ("mutates-request", MutatesTheRequest, None, "results", "count_chat modified the request 'tools'"),
    ("clear-cache-not-idempotent", ClearCacheOnce, None, "lifecycle",
     "clear_cache() raised AttributeError when called repeatedly"),
    ("close-not-idempotent", CloseOnce, None, "lifecycle", "close() raised RuntimeError when called repeatedly"),
    ("broken-after-close", BrokenAfterClose, None, "lifecycle", "after close() twice, count_chat raised RuntimeError"),
]


@pytest.mark.parametrize(("build", "reference", "check", "message"), [case[1:] for case in BROKEN],
                         ids=[case[0] for case in BROKEN])
def test_each_flaw_fails_its_check_with_its_message(build, reference, check: str, message: str) -> None:
    report = run_checks(build(), None if reference is None else reference())
    assert [failed.name for failed in report.failed] == [check], report.text()
    failed = report.check(check)
    assert message in failed.detail and failed.fix, failed
    with pytest.raises(AssertionError, match=re.escape(check)):
        assert_conformant(build(), None if reference is None else reference())


def test_the_report_quotes_no_request_text() -> None:
    report = run_checks(LeaksPromptText())
    assert "baton-kit-canary" not in report.text() and "baton-kit-canary" not in str(report.to_dict())
