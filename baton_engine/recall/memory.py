"""Baton's in-process index of what it compacted, for hosts that bind no session store.

Bounded (UTF-8 size of the stored text, tool names and arguments plus a fixed cost per entry; 64 MB per process
by default),
least-recently-used lineages evicted first, then the oldest messages of a lineage that alone
exceeds the bound. Thread-safe. Never written to disk: it dies with the process, by design.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from baton_engine.messages.entry import Entry, Message, build_entries

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What an entry costs beyond its text: the Entry object, its ref and fields (measured with tracemalloc:
# benchmarks/FINDINGS.md, finding 10). Without it a bound in text bytes let many short messages take several times
# the bound.
ENTRY_OVERHEAD_BYTES = 300


def _cost(entry: Entry) -> int:
    return entry.size_bytes + ENTRY_OVERHEAD_BYTES


class _Lineage:
    def __init__(self) -> None:
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.next_position = 0
        self.size = 0


class MemoryIndex:
    """``add(key, compacted_messages)`` at each compaction; ``source(key)`` for ``search``/``expand``.

    ``key`` names a session lineage; carry it across Hermes' session rotation with ``carry_over``.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._lineages: OrderedDict[str, _Lineage] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryIndex:
        """Shared, not copied: Hermes deep-copies the engine per agent, and the index is per process."""
        return self

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._size

    def keys(self) -> list[str]:
        """Lineage keys, least recently used first."""
        with self._lock:
            return list(self._lineages)

    def add(self, key: str, messages: Iterable[Message]) -> list[str]:
        """Index the compacted ``messages`` under ``key``; returns the refs of the entries added."""
        return self.add_entries(key, build_entries(messages))

    def add_entries(self, key: str, entries: Iterable[Entry]) -> list[str]:
        """Index entries already built (``build_entries``) under ``key``; returns the refs of those added."""
        with self._lock:
            lineage = self._lineages.setdefault(key, _Lineage())
            self._lineages.move_to_end(key)
            added = []
            for entry in entries:
                if entry.ref in lineage.entries:
                    continue
                entry = Entry(entry.ref, lineage.next_position, entry.role, entry.text, entry.tool_name, entry.arguments)
                lineage.entries[entry.ref] = entry
                lineage.next_position += 1
                cost = _cost(entry)
                lineage.size += cost
                self._size += cost
                added.append(entry.ref)
            if not lineage.entries:  # nothing indexable: no empty lineage left behind per session
                del self._lineages[key]
            self._evict()
            return [ref for ref in added if ref in lineage.entries]

    def _evict(self) -> None:
        while self._size > self.max_bytes and len(self._lineages) > 1:
            _, lineage = self._lineages.popitem(last=False)
            self._size -= lineage.size
        if self._size > self.max_bytes:
            (lineage,) = self._lineages.values()
            while self._size > self.max_bytes and lineage.entries:
                _, entry = lineage.entries.popitem(last=False)
                lineage.size -= _cost(entry)
                self._size -= _cost(entry)

    def carry_over(self, old_key: str, new_key: str) -> None:
        """Hermes rotated the session id: the lineage continues under ``new_key``.

        If ``new_key`` already holds a lineage, that one is kept and ``old_key``'s is dropped.
        """
        with self._lock:
            lineage = self._lineages.pop(old_key, None)
            if lineage is not None and new_key not in self._lineages:
                self._lineages[new_key] = lineage
            elif lineage is not None:
                self._size -= lineage.size

    def drop(self, key: str) -> None:
        """Forget a lineage (the session ended or was reset)."""
        with self._lock:
            lineage = self._lineages.pop(key, None)
            if lineage is not None:
                self._size -= lineage.size

    def source(self, key: str) -> MemorySource:
        return MemorySource(self, key)

    def _snapshot(self, key: str) -> list[Entry]:
        with self._lock:
            lineage = self._lineages.get(key)
            if lineage is None:
                return []
            self._lineages.move_to_end(key)
            return list(lineage.entries.values())

    def _get(self, key: str, ref: str) -> Entry | None:
        with self._lock:
            lineage = self._lineages.get(key)
            return lineage.entries.get(ref) if lineage is not None else None


class MemorySource:
    """A ``RecallSource`` over one lineage of a ``MemoryIndex``."""

    def __init__(self, index: MemoryIndex, key: str) -> None:
        self._index = index
        self._key = key

    def entries(self) -> Sequence[Entry]:
        return self._index._snapshot(self._key)

    def get(self, ref: str) -> Entry | None:
        return self._index._get(self._key, ref)
