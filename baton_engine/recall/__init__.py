"""Recall: search what compaction took out of THIS session's lineage and page it back in.

Pure core: no Hermes import. Two sources behind one protocol (``RecallSource``): Hermes' session store
when the host binds one (``SessionStoreSource``), Baton's in-process ``MemoryIndex`` otherwise. Baton
never writes a transcript to disk; the index lives in memory only. What recall shares with compaction (a
message's entry, key and ref; Baton's markers) lives below both, in ``baton_engine.messages``.
"""

from __future__ import annotations

from baton_engine.recall.expand import MAX_BUDGET_TOKENS, Expansion, expand
from baton_engine.recall.memory import DEFAULT_MAX_BYTES, MemoryIndex, MemorySource
from baton_engine.recall.query import MAX_QUERY_CHARS, Query, Term, parse_query
from baton_engine.recall.search import Hit, search
from baton_engine.recall.session_store import SessionStoreSource
from baton_engine.recall.source import RecallSource
from baton_engine.recall.tool import TOOL_NAME, TOOL_SCHEMA, RecallArgs, recall_tool

__all__ = [
    "DEFAULT_MAX_BYTES", "MAX_BUDGET_TOKENS", "MAX_QUERY_CHARS", "TOOL_NAME", "TOOL_SCHEMA",
    "Expansion", "Hit", "MemoryIndex", "MemorySource", "Query", "RecallArgs", "RecallSource",
    "SessionStoreSource", "Term", "expand", "parse_query", "recall_tool", "search",
]
