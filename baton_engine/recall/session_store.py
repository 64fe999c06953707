"""A ``RecallSource`` over Hermes' own session store (``hermes_state.SessionDB``), duck-typed.

What a compaction leaves there (hermes-agent 0.19.0): with session rotation the pre-compaction
messages stay in the parent sessions (``parent_session_id`` chain, each parent ended with
``end_reason = "compression"``); with ``compression.in_place`` they stay in the same session as
``active = 0, compacted = 1`` rows. The lineage is walked up from the bound session only through
compression parents, never into the session a ``/branch`` was made from or a delegating parent
agent. Searched: every ancestor row plus the current session's compacted rows and the live rows a prune took out of
the request (``pruned``: their refs); rows a rewind took back (``active = 0, compacted = 0``) and the current
session's other live rows are not. Only public
``SessionDB`` methods are used (``get_session``, ``get_messages``); nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from baton_engine.messages.entry import Entry, Message, build_entries, ref_for

MAX_LINEAGE_DEPTH = 1000


def _branched(session: dict[str, Any]) -> bool:
    """Hermes marks a ``/branch`` child in its model_config (``_branched_from``)."""
    raw = session.get("model_config")
    try:
        config = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return False
    return isinstance(config, dict) and config.get("_branched_from") is not None


def _as_message(row: dict[str, Any]) -> Message:
    message: Message = {"role": row.get("role"), "content": row.get("content")}
    for key in ("tool_calls", "tool_call_id", "tool_name"):
        if row.get(key):
            message[key] = row[key]
    return message


class SessionStoreSource:
    """The compacted messages of the lineage ending at ``session_id``."""

    def __init__(self, session_db: Any, session_id: str, *, pruned: frozenset[str] = frozenset()) -> None:
        self._db = session_db
        self._session_id = session_id
        self._pruned = pruned  # refs of the bound session's live messages a prune took out of the request

    def lineage(self) -> list[str]:
        """Session ids from the lineage root to the bound session."""
        chain = [self._session_id]
        current = self._db.get_session(self._session_id)
        while current and current.get("parent_session_id") and len(chain) < MAX_LINEAGE_DEPTH:
            parent = self._db.get_session(current["parent_session_id"])
            if not parent or parent.get("end_reason") != "compression" or _branched(current) or parent["id"] in chain:
                break
            chain.append(parent["id"])
            current = parent
        return chain[::-1]

    def entries(self) -> Sequence[Entry]:
        rows: list[Message] = []
        live: list[Message] = []  # the bound session's live rows: read only when a prune took some out
        for session_id in self.lineage():
            live_excluded = session_id == self._session_id
            for row in self._db.get_messages(session_id, include_inactive=True):
                active, compacted = bool(row.get("active", 1)), bool(row.get("compacted", 0))
                if not active and not compacted:
                    continue
                if active and live_excluded:
                    if self._pruned:
                        live.append(_as_message(row))
                    continue
                rows.append(_as_message(row))
        if not live:
            return build_entries(rows)
        # the live rows go in (a pruned result finds the call it answers there), then only the pruned ones stay
        kept = {ref_for(row) for row in rows}
        wanted = self._pruned | kept
        return [entry for entry in build_entries([*rows, *live]) if entry.ref in wanted]

    def get(self, ref: str) -> Entry | None:
        return next((entry for entry in self.entries() if entry.ref == ref), None)
