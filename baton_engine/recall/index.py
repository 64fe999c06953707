"""The ranking index of one lineage: its passages and their FTS5 table, grown incrementally, kept per process.

Why cached: a lineage only grows (a compaction appends what it took out), so the index adds the new entries'
passages instead of rebuilding on every search; it is found again by the ref of the lineage's first entry (refs are
content-addressed: the same in Hermes' store and in the in-process index, across session rotation) and used only
when the lineage starts with every entry it indexed; otherwise (another conversation that opened with the same
message, or the in-process index evicted its oldest messages) it is rebuilt.
In memory only; at most ``MAX_LINEAGES`` lineages, least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from cachetools import LRUCache

from baton_engine.embedding import Embedder
from baton_engine.messages.entry import Entry
from baton_engine.recall.dense import Vectors, embedded_and_pending
from baton_engine.recall.lexical import LexicalIndex
from baton_engine.recall import redacted
from baton_engine.recall.passages import Passage, passages

MAX_LINEAGES = 16


class LineageIndex:
    """Passages of the entries indexed so far, in order, and their lexical index."""

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        self.lexical = LexicalIndex()
        self.refs: list[str] = []
        self.lock = threading.Lock()
        self._vectors: dict[str, Vectors] = {}

    def vectors(self, embedder: Embedder) -> Vectors:
        """This lineage's vectors for ``embedder``: the cached ones taken, what is missing queued for the worker."""
        with self.lock:
            vectors = self._vectors.setdefault(embedder.name, Vectors(embedder.name))
            passages = list(self.passages)
        vectors.update(passages, embedder)
        return vectors

    def extends(self, entries: Sequence[Entry]) -> bool:
        """Whether ``entries`` start with exactly what this index holds (so only the rest is new): two
        conversations that open with the same message never share an index."""
        return len(entries) >= len(self.refs) and all(
            entry.ref == ref for entry, ref in zip(entries, self.refs, strict=False))

    def grow(self, entries: Sequence[Entry]) -> None:
        """Index the entries past those held (their passages); their redacted texts are prepared in the
        background (what a hit costs, off the request path)."""
        added = entries[len(self.refs):]
        new = [p for entry in added for p in passages(entry)]
        self.lexical.add(new)
        self.passages.extend(new)
        self.refs.extend(entry.ref for entry in added)
        redacted.prepare(added)


_INDEXES: LRUCache[str, LineageIndex] = LRUCache(maxsize=MAX_LINEAGES)
_LOCK = threading.Lock()


def status(entries: Sequence[Entry], embedder: Embedder | None) -> dict[str, object]:
    """The lineage whose compacted messages are ``entries``, as its index holds it (never built here): messages and
    passages indexed, and with an ``embedder`` the rows embedded (their vectors in the process), the rows pending
    (still to embed), the rows a search ranks (taken into the lineage's vectors at its last search) and their bytes
    (counts only: the index never leaves the process)."""
    with _LOCK:
        index = _INDEXES.get(entries[0].ref) if entries else None
    if index is None or not index.extends(entries):
        index = LineageIndex()
    with index.lock:
        passages, messages = list(index.passages), len(index.refs)
        vectors = index._vectors.get(embedder.name) if embedder is not None else None
    found: dict[str, object] = {"messages": len(entries), "messages_indexed": messages, "passages": len(passages)}
    if embedder is not None:
        embedded, pending = embedded_and_pending(embedder.name, passages)
        found.update(rows_embedded=embedded, rows_pending=pending, rows_ranked=vectors.rows if vectors else 0,
                     vector_bytes=vectors.nbytes if vectors else 0)
    return found


def lineage_index(entries: Sequence[Entry], embedder: Embedder | None = None) -> LineageIndex:
    """The index of the lineage whose compacted messages are ``entries`` (in order), up to date; with an
    ``embedder``, its missing vectors are queued for the background worker."""
    if not entries:
        return LineageIndex()
    with _LOCK:
        index = _INDEXES.get(entries[0].ref)
        if index is None or not index.extends(entries):
            index = _INDEXES[entries[0].ref] = LineageIndex()
    with index.lock:
        if not index.extends(entries):  # another thread rebuilt it meanwhile: start again for this call
            index = LineageIndex()
        index.grow(entries)
    if embedder is not None:
        index.vectors(embedder)
    return index
