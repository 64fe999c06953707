"""Rank the entries of a lineage against a query (BM25 over whole terms) and build redacted hits.

Why rank in-process instead of asking the store's FTS5: Hermes' ``search_messages`` has no session
filter and a global LIMIT (hits of the current lineage can be pushed out by other sessions), and its
tokenizer splits paths and identifiers. One ranking over both sources also gives the same answer
whether a session DB is bound or not. Order is score, then position: deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from baton_engine.errors import UserInputError
from baton_engine.handoff.redact import redact_text
from baton_engine.messages.entry import Entry
from baton_engine.recall.source import RecallSource
from baton_engine.recall.query import Query, Term, parse_query

CountText = Callable[[str], int]
MAX_LIMIT = 50
SNIPPET_BEFORE = 80
SNIPPET_AFTER = 160
ARGUMENTS_CHARS = 240
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True)
class Hit:
    """One search result: where it is (``ref``, ``line``), what it is, and what paging it in costs."""

    ref: str
    position: int
    score: float
    role: str
    tool_name: str | None
    arguments: str | None
    line: int
    snippet: str
    tokens: int

    def to_dict(self) -> dict[str, object]:
        """Every field but ``position``, which only orders the hits (``ref`` names the message)."""
        return {key: value for key, value in asdict(self).items() if key != "position"}


def _scores(entries: list[Entry], terms: tuple[Term, ...]) -> list[tuple[float, Entry]]:
    texts = [entry.searchable for entry in entries]
    counts = [[len(pattern.findall(text)) for text in texts] for pattern in (term.pattern for term in terms)]
    average = max(1.0, sum(len(text) for text in texts) / len(texts))
    total = len(entries)
    idfs = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df in (sum(1 for n in row if n) for row in counts)]
    scored = []
    for index, entry in enumerate(entries):
        score = 0.0
        norm = _K1 * (1 - _B + _B * len(texts[index]) / average)
        for term, term_counts, idf in zip(terms, counts, idfs, strict=True):
            tf = term_counts[index]
            if tf:
                score += term.weight * idf * tf * (_K1 + 1) / (tf + norm)
        if score > 0:
            scored.append((score, entry))
    return scored


def locate(text: str, terms: tuple[Term, ...]) -> tuple[int, int] | None:
    """(start, end) of the first place the terms occur together, in the query's order (``r1i0 L003``
    means that line, not the first ``r1i0``); else of the first match of the heaviest term in ``text``."""
    if len(terms) > 1:
        together = Term("phrase", " ".join(t.text for t in terms)).pattern.search(text)
        if together:
            return together.span()
    for term in sorted(terms, key=lambda t: -t.weight):
        found = term.pattern.search(text)
        if found:
            return found.span()
    return None


def _snippet(text: str, span: tuple[int, int] | None) -> str:
    start, end = span or (0, 0)
    low, high = max(0, start - SNIPPET_BEFORE), min(len(text), end + SNIPPET_AFTER)
    body = " ".join(text[low:high].split())
    return ("…" if low else "") + body + ("…" if high < len(text) else "")


def clip_redacted(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    clean = redact_text(text)[0]
    return clean if len(clean) <= limit else clean[:limit] + "…"


def make_hit(entry: Entry, score: float, query: Query, count_text: CountText) -> Hit:
    """A hit for ``entry``: everything in it redacted, the cost measured on the redacted text."""
    text = redact_text(entry.text)[0]
    span = locate(text, query.terms)
    line = text.count("\n", 0, span[0]) + 1 if span else 1
    if span is None:  # the match is in the tool name or the call's arguments: show that
        searchable = redact_text(entry.searchable)[0]
        snippet = _snippet(searchable, locate(searchable, query.terms))
    else:
        snippet = _snippet(text, span)
    return Hit(entry.ref, entry.position, round(score, 4), entry.role, clip_redacted(entry.tool_name, ARGUMENTS_CHARS),
               clip_redacted(entry.arguments, ARGUMENTS_CHARS), line, snippet, count_text(text))


def int_in_range(value: object, low: int, high: int) -> bool:
    """A real int (not a bool) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def search(source: RecallSource, query: str, limit: int, count_text: CountText) -> list[Hit]:
    """The best ``limit`` hits for ``query`` in the lineage behind ``source``."""
    if not int_in_range(limit, 1, MAX_LIMIT):
        raise UserInputError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    parsed = parse_query(query)
    entries = list(source.entries())
    if not entries:
        return []
    ranked = sorted(_scores(entries, parsed.terms), key=lambda pair: (-pair[0], pair[1].position))
    return [make_hit(entry, score, parsed, count_text) for score, entry in ranked[:limit]]
