"""Count the corpus once and remember each result (or the exception type) as a comparable value.

Why: every safety check (deep copy, threads, lifecycle) asks the same question, "does this path count the
same as the plain serial run?", so the answer has to be a value that compares with ``==``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from baton_engine.testing import corpus
from baton_engine.tokens.contract import CannotCount, TokenCount, TokenizerBackend


@dataclass(frozen=True)
class Item:
    kind: str  # "chat" or "text"
    name: str
    payload: Any


@dataclass(frozen=True)
class Outcome:
    """A count (``result``) or the type name of what was raised (``error``); never an exception message."""

    result: Any = None
    error: str | None = None
    cannot_count: bool = False

    @property
    def count(self) -> TokenCount | None:
        return self.result if self.error is None and isinstance(self.result, TokenCount) else None


def items() -> list[Item]:
    return [Item("chat", name, request) for name, request in corpus.chat_requests()] + [
        Item("text", name, text) for name, text in corpus.texts()
    ]


def count(backend: TokenizerBackend, item: Item) -> Outcome:
    try:
        result = backend.count_chat(item.payload) if item.kind == "chat" else backend.count_text(item.payload)
    except Exception as exc:  # noqa: BLE001 - the kit reports the type; the message may quote the request
        return Outcome(error=type(exc).__name__, cannot_count=isinstance(exc, CannotCount))
    return Outcome(result=result)


def count_all(backend: TokenizerBackend, chosen: Iterable[Item]) -> dict[str, Outcome]:
    return {f"{item.kind}:{item.name}": count(backend, item) for item in chosen}


def try_clear_cache(backend: TokenizerBackend) -> None:
    """Empty the backend's cache before a measurement; a clear_cache() that raises is the lifecycle check's
    finding, not this measurement's."""
    try:
        backend.clear_cache()
    except Exception:  # noqa: BLE001 - the backend author's code; the lifecycle check reports it
        pass


def tokens_of(outcome: Outcome) -> Any:
    """What two runs must agree on: tokens and exactness, or the same exception type."""
    found = outcome.count
    return (found.tokens, found.exact) if found is not None else ("raised", outcome.error)
