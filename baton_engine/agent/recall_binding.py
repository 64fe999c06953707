"""One agent's recall side: where ``baton_recall`` reads and what a compaction remembers for it.

Why a module of its own: recall binds a host object (its session store: Hermes' SessionDB) the engine must never
copy, and picks the source — the host's own store of this lineage when bound, else Baton's in-process index
(bounded, never on disk) — which the cycle only sees as plain callables (``continuity.Recall``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from baton_engine.agent.requests import RequestBudgeter
from baton_engine.agent.runtime import RouteCounting, get_runtime
from baton_engine.compaction import continuity
from baton_engine.messages.entry import Entry, build_entries
from baton_engine.recall import RecallSource, SessionStoreSource, recall_tool
from baton_engine.recall import dense, redacted
from baton_engine.recall import index as recall_index
from baton_engine.recall.index import lineage_index
from baton_engine.recall.passages import passages
from baton_engine.tokens.rough import estimate_tokens_rough


class _Borrowed:
    """A host object the engine uses but never copies: a session store (Hermes' SessionDB) holds a connection and a
    lock."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __deepcopy__(self, memo: dict[int, Any]) -> _Borrowed:
        return self


class RecallBinding:
    """Where this agent's ``baton_recall`` reads: the host's session store when bound (borrowed, never copied), else
    its lineage in the runtime's in-process index. Counts with the agent's route (``requests``)."""

    def __init__(self, requests: RequestBudgeter) -> None:
        self.requests = requests
        self._session_db = _Borrowed(None)  # the host's session store (Hermes' SessionDB) when it binds one
        self.lineage_key: str | None = None  # this lineage in the runtime's in-process recall index
        self.pruned_refs: set[str] = set()  # live messages of the bound session a prune took out (recallable)

    @property
    def session_db(self) -> Any:
        return self._session_db.value

    def bind(self, session_db: Any) -> None:
        self._session_db = _Borrowed(session_db)

    def rotated(self, session_id: str) -> None:
        """The host rotated the session id at compaction: the lineage's recallable entries move with it."""
        if self.lineage_key is not None:
            get_runtime().recall_index.carry_over(self.lineage_key, session_id)
            self.lineage_key = session_id

    def new_lineage(self) -> None:
        self.lineage_key = None

    def status(self, session_id: str | None) -> dict[str, Any]:
        """Where ``baton_recall`` reads and how it ranks (counts only; the index never leaves the process)."""
        runtime = get_runtime()
        index = runtime.recall_index
        bound = self.session_db is not None and bool(session_id)
        embedder = runtime.embedder()
        if embedder is None:
            ranking = "lexical" + (f" (embedder not started: {runtime.embedder_error})"
                                   if runtime.embedder_error else " (no embedder configured)")
        else:
            ranking = f"hybrid ({embedder.name})" if embedder.healthy else \
                f"lexical (embedder {embedder.name} failing: {embedder.last_error}; retried later)"
        store = f"{self.requests.host.name.lower()} session store"
        return {"source": store if bound else "in-process index", "ranking": ranking,
                "index_bytes": index.size_bytes, "index_max_bytes": index.max_bytes,
                "lineage": recall_index.status(self.source(session_id).entries(), embedder)}

    def _lineage(self, session_id: str | None) -> str:
        if self.lineage_key is None:
            self.lineage_key = session_id or f"engine-{uuid.uuid4().hex}"
        return self.lineage_key

    def source(self, session_id: str | None) -> RecallSource:
        """The host's own store of this lineage when bound, else what Baton compacted (in-process only)."""
        if self.session_db is not None and session_id:
            return SessionStoreSource(self.session_db, session_id, pruned=frozenset(self.pruned_refs))
        return get_runtime().recall_index.source(self._lineage(session_id))

    def hooks(self, session_id: str | None) -> continuity.Recall:
        source = self.source(session_id)
        if isinstance(source, SessionStoreSource):  # the host's store keeps the region; only its vectors are Baton's
            return continuity.Recall(remember=self._remembered, lineage=source.entries)
        index, key = get_runtime().recall_index, self._lineage(session_id)

        def remember(entries: list[Entry]) -> None:
            index.add_entries(key, entries)
            lineage_index(source.entries())  # the region's passages indexed now, not by the next search
            self._remembered(entries)

        return continuity.Recall(remember=remember, lineage=source.entries)

    def remember_pruned(self, messages: list[dict[str, Any]], session_id: str | None) -> None:
        """What a prune took out (each result with the call it answers), recallable from now on: into the in-process
        index, or, with the host's store bound (whose rows still hold it, live in this session), named for its source to
        include (``SessionStoreSource``'s ``pruned`` refs)."""
        entries = build_entries(messages)
        if self.session_db is not None and session_id:
            self.pruned_refs.update(entry.ref for entry in entries)
        else:
            get_runtime().recall_index.add_entries(self._lineage(session_id), entries)
            lineage_index(self.source(session_id).entries())  # indexed now, not by the next search
        self._remembered(entries)

    def _remembered(self, entries: list[Entry]) -> None:
        """Entries recall keeps from now on: their counts (a later hit's exact cost from the counter's cache) and
        vectors, in the background (off the request path)."""
        redacted.count_ahead(entries, self._warm_count(self.requests.counting()))
        embedder = get_runtime().embedder()
        if embedder is not None:
            dense.queue([p for entry in entries for p in passages(entry)], embedder)

    @staticmethod
    def _warm_count(counting: RouteCounting) -> Callable[[str], int]:
        """Fill the counter's cache ahead of a search, on the background thread: with the route's counting resolved
        on the caller's thread (the worker resolves no settings), and only with a tokenizer that runs already, so
        the first request, not the worker, is the one that waits for it to start."""
        def warm(text: str) -> int:
            counter = counting.ready_counter()
            return counter.count_text(text).tokens or 0 if counter is not None else 0

        return warm

    def count_text_tokens(self, text: str) -> int:
        """Exact when the tokenizer answers, else the rough estimate: recall budgets never fail."""
        counted = self.requests.counting().count_text(text)
        return counted.tokens if counted.tokens is not None else estimate_tokens_rough(text)

    def recall(self, args: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        """``baton_recall`` over this lineage (the tools module redacts the answer again)."""
        return recall_tool(self.source(session_id), args, self.count_text_tokens, get_runtime().embedder())

