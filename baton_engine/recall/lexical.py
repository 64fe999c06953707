"""Lexical ranking of passages by SQLite FTS5: BM25 with Porter stemming, fields weighted.

Why FTS5: it ships with Python's sqlite3 (no dependency), stems (``rounding`` finds ``round``), ranks with BM25
and weighs columns, and adds rows incrementally. Each passage is a row that fills the column of its message's role
(a user's statement, a tool result's lines, an assistant's words); the tool name and arguments that produced a
result are one more row of that message (column ``call``, standing for its first passage), so a result is found by
its command without lengthening every passage's row. The table lives in memory only (it dies with the process).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

from baton_engine.recall.passages import Passage
from baton_engine.recall.query import Query, Term

# Column weights (user, tool, assistant, call): a user's statement outranks the same words in a tool result's
# lines, which outrank the assistant's paraphrase of them (benchmarks/recall/paraphrase_bench.py, docs/recall.md).
WEIGHTS = (2.0, 1.0, 0.5, 1.0)
_COLUMNS = ("user", "tool", "assistant")
# A query word of letters or digits this long or longer also matches the words it begins, as ``query`` defines a
# match (its stem as an FTS5 prefix: ``times`` finds ``Timestamps``, which stemming alone does not); a shorter one
# begins too many unrelated words and matches only itself, stemmed. Measured on the paraphrase corpus
# (benchmarks/recall/paraphrase_bench.py, FINDINGS 21): with every word a prefix, an absent question of its 144-message
# session found a line holding ``Run`` and ``etl_user`` for its ``run`` and ``use`` (1 false "found" in 10, 0 before);
# from 4 letters on, 0 and the same answers.
PREFIX_WORD_CHARS = 4


class LexicalIndex:
    """FTS5 table of passages; a match names the passage by its number in the index (0-based)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE passages USING fts5(user, tool, assistant, call, "
                         "tokenize = 'porter unicode61')")
        self._lock = threading.Lock()
        self._passage_of: list[int] = []  # row -> passage number
        self.size = 0  # passages

    def add(self, items: Iterable[Passage]) -> None:
        rows = []
        for passage in items:
            role = passage.entry.role if passage.entry.role in _COLUMNS else "assistant"
            rows.append((self.size, *(passage.text if column == role else "" for column in _COLUMNS), ""))
            call = " ".join(part for part in (passage.entry.tool_name, passage.entry.arguments) if part)
            if call and passage.first_line == 1:
                rows.append((self.size, "", "", "", call))
            self.size += 1
        with self._lock:
            first = len(self._passage_of)
            self._db.executemany("INSERT INTO passages(rowid, user, tool, assistant, call) VALUES (?, ?, ?, ?, ?)",
                                 [(first + n, *row[1:]) for n, row in enumerate(rows)])
            self._db.commit()  # uncommitted rows stay in FTS5's pending hash, which a prefix query scans whole
            self._passage_of.extend(row[0] for row in rows)

    def rows_matching(self, term: Term, at_most: int) -> int:
        """How many rows hold ``term`` (counted up to ``at_most + 1``: enough to tell a rare term)."""
        expression = fts_query(Query((term,)))
        if not expression:
            return 0
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM (SELECT 1 FROM passages WHERE passages MATCH ? LIMIT ?)",
                                        (expression, at_most + 1)).fetchone()[0])

    def search(self, query: Query, limit: int) -> list[tuple[int, float]]:
        """(passage number, BM25 score: higher is better) of the best ``limit`` rows matching any term."""
        expression = fts_query(query)
        if not expression:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, -bm25(passages, ?, ?, ?, ?) FROM passages WHERE passages MATCH ? "
                "ORDER BY bm25(passages, ?, ?, ?, ?), rowid LIMIT ?",
                (*WEIGHTS, expression, *WEIGHTS, limit)).fetchall()
            return [(self._passage_of[int(rowid)], float(score)) for rowid, score in rows]


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_query(query: Query) -> str:
    """The terms as an FTS5 OR of quoted strings (FTS5 tokenizes and stems each; a path or identifier becomes
    the phrase of its parts); a word of ``PREFIX_WORD_CHARS`` or more also matches as a prefix (``times`` finds
    ``Timestamps``), a hash-like identifier too (a short hash finds the full one), and all the terms as one phrase
    count too."""
    parts = []
    for term in query.terms:
        if not any(ch.isalnum() for ch in term.text):
            continue
        word = term.kind == "word" and len(term.text) >= PREFIX_WORD_CHARS
        prefix = (word or term.kind == "identifier") and term.text.isalnum()
        parts.append(_quoted(term.text) + ("*" if prefix else ""))
    if len(parts) > 1:  # the terms together, in the query's order, rank above the same terms apart
        parts.append(_quoted(" ".join(term.text for term in query.terms)))
    return " OR ".join(parts)
