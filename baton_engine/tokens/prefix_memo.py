"""``PrefixMemo``: per-message results of a growing conversation, each message computed once.

Why: a host sends the whole history on every request although only the last messages are new, and several
of Baton's per-request steps are per message (the request key's digest, the projection of a stored message
onto the wire). Recomputing them made the per-request overhead linear in the history. Messages are mutable dicts that hosts edit in place, so results cannot be keyed by identity: a
chain remembers a snapshot of the messages it computed (plain copies of their dicts and lists, strings
shared) and its results are reused for the longest remembered prefix whose snapshot equals the list's
first messages. That comparison is ``==``, C-level, and identical strings compare by identity, so reusing a
4,000-message prefix costs about a millisecond; an edited message ends the reused prefix there. ``==`` of
dicts ignores key order: a result of a message whose keys were reordered in place is reused (what Baton
computes per message reads fields by name, as chat templates do).

Bounded: ``MAX_CHAINS`` conversations protected and as many on probation (a segmented LRU: a list enters on
probation and is protected once a later list extends or repeats it, so the one-off lists a compaction counts
never push a live conversation out), ``MAX_MESSAGES`` messages each (a longer list is not remembered).
Thread-safe; results are shared, callers never change them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from baton_engine.tokens.contract import NotPlain, plain_copy

T = TypeVar("T")
MAX_CHAINS = 4
MAX_MESSAGES = 16_384


@dataclass(frozen=True)
class _Chain(Generic[T]):
    snapshot: list[Any]
    results: list[T]


class PrefixMemo(Generic[T]):
    """``results(messages)`` = ``[compute(m) for m in messages]``, computing only what no remembered prefix holds."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self._compute = compute
        self._probation: OrderedDict[int, _Chain[T]] = OrderedDict()
        self._protected: OrderedDict[int, _Chain[T]] = OrderedDict()
        self._next_id = 0
        self._lock = threading.Lock()
        self.computed = 0  # messages computed so far (observability, tests)

    def results(self, messages: Sequence[Any]) -> list[T]:
        """Per-message results (raises what ``compute`` raises). A list holding something other than plain data
        (``plain_copy``) is computed but not remembered."""
        chain_id, chain = self._longest_prefix(messages)
        start = len(chain.snapshot) if chain is not None else 0
        added = messages[start:]
        fresh = [self._compute(m) for m in added]
        self.computed += len(added)
        results = (chain.results if chain is not None else []) + fresh
        if len(results) > MAX_MESSAGES:
            return results
        try:
            snapshot = (chain.snapshot if chain is not None else []) + [plain_copy(m) for m in added]
        except NotPlain:
            return results
        self._remember(chain_id, _Chain(snapshot, results))
        return list(results)

    def clear(self) -> None:
        with self._lock:
            self._probation.clear()
            self._protected.clear()

    def remembered(self) -> list[int]:
        """Message counts of the remembered chains: protected ones first, each segment least recently used first."""
        with self._lock:
            return [len(chain.snapshot) for chain in (*self._protected.values(), *self._probation.values())]

    def _longest_prefix(self, messages: Sequence[Any]) -> tuple[int | None, _Chain[T] | None]:
        with self._lock:
            candidates = sorted([*self._protected.items(), *self._probation.items()],
                                key=lambda item: -len(item[1].snapshot))
        for chain_id, chain in candidates:
            size = len(chain.snapshot)
            if size > len(messages):
                continue
            if chain.snapshot == list(messages[:size]):
                return chain_id, chain
        return None, None

    def _remember(self, chain_id: int | None, chain: _Chain[T]) -> None:
        with self._lock:
            known = chain_id is not None and (chain_id in self._protected or chain_id in self._probation)
            if not known:
                chain_id, self._next_id = self._next_id, self._next_id + 1
                self._probation[chain_id] = chain
            else:
                self._probation.pop(chain_id, None)
                self._protected[chain_id] = chain
                self._protected.move_to_end(chain_id)
            while len(self._protected) > MAX_CHAINS:
                demoted, old = self._protected.popitem(last=False)
                self._probation[demoted] = old
            while len(self._probation) > MAX_CHAINS:
                self._probation.popitem(last=False)
