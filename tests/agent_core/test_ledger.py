"""The ledger's request sent: the one its count was made of, never the host's own copy of the history."""

from __future__ import annotations

from typing import Any

from baton_engine.agent.ledger import Ledger
from baton_engine.request import ProviderRequest
from baton_engine.tokens.contract import TokenCount


class Counting:
    def __init__(self) -> None:
        self.counted: list[Any] = []

    def count_chat(self, request: Any, **_: Any) -> TokenCount:
        self.counted.append(request)
        return TokenCount(10 * len(request["messages"]), True, "test")


def view(messages: list[dict[str, Any]]) -> ProviderRequest:
    return ProviderRequest(messages=tuple(messages))


def test_the_request_sent_is_the_one_counted_when_both_say_the_same() -> None:
    """The estimate counts its own view, the middleware sends the host's copy of the same prompt: the ledger keeps
    the counted request, so the host's copies are freed by the host (at 4,000 messages, freeing them in the next
    request took a millisecond)."""
    ledger, counting = Ledger(), Counting()
    counted = view([{"role": "user", "content": "hi"}])
    ledger.count(counted, counting)
    hosts = view([{"role": "user", "content": "hi"}])
    assert ledger.count(hosts, counting).tokens == 10 and len(counting.counted) == 1
    ledger.sent_request(hosts)
    assert ledger.sent is counted.count_request() and ledger.sent_count is ledger.memo


def test_a_request_sent_that_differs_from_the_one_counted_is_kept_itself() -> None:
    ledger, counting = Ledger(), Counting()
    ledger.count(view([{"role": "user", "content": "hi"}]), counting)
    other = view([{"role": "user", "content": "hi, edited"}])
    ledger.sent_request(other)
    assert ledger.sent is other.count_request() and ledger.sent_count is None
