"""Rank a lineage's passages against a query and build redacted hits that carry the answer-bearing lines.

Why rank in-process instead of asking the store's FTS5: Hermes' ``search_messages`` has no session filter and a
global LIMIT (hits of the current lineage can be pushed out by other sessions). One ranking over both sources
(``index.lineage_index``: FTS5 over passages) also gives the same answer whether a session DB is bound or not.
A hit is the best passage of one message (its lines, not the message's first ones); order is score, then
position, but for the exact lookups' places (below): deterministic. A hit scoring under the measured floor is still
returned, flagged ``weak``: "not found" is every hit weak, and an answer that ranks low is not lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from baton_engine.errors import UserInputError
from baton_engine.handoff.redact import redact_text
from baton_engine.embedding import Embedder, EmbedderError, embed_questions, weak_below
from baton_engine.messages.entry import Entry
from baton_engine.recall.index import LineageIndex, lineage_index
from baton_engine.recall.passages import Passage
from baton_engine.recall.query import Query, Term, parse_query
from baton_engine.recall.redacted import message_text, passage_text
from baton_engine.recall.source import RecallSource

CountText = Callable[[str], int]
MAX_LIMIT = 50
SNIPPET_BEFORE = 80
SNIPPET_AFTER = 160
SNIPPET_CHARS = 700  # a passage is at most 600 characters; redaction may lengthen it a little
ARGUMENTS_CHARS = 160
# A lexical hit under this BM25 score is weak. Measured on the paraphrase corpus (benchmarks/recall/paraphrase_bench.py):
# the best hit of a question whose answer is absent scores under it, see docs/recall.md.
LEXICAL_FLOOR = 12.0
# With an embedder: a hit is weak when its cosine is under DENSE_FLOOR and its BM25 under LEXICAL_FLOOR;
# LEXICAL_WEIGHT is the most a lexical match adds to the cosine. Measured with all-MiniLM-L6-v2 on the paraphrase
# corpus (benchmarks/recall/paraphrase_bench.py, docs/recall.md): a passage scores its best line's cosine; over the whole
# session the best lines of the 10 absent questions reached 0.527 and 0.522, the answerable questions' best 0.26-0.63
# (the model does not separate them): floor 0.53, 0 false "found" in 10 (0.50: 2). Lexical weight 0.05 answered
# 23 / 36 at 16K and 24 / 36 at 64K, 0.1 and 0.2 one fewer, 0 (dense only) two fewer, plain RRF two fewer (1 false
# "found"); retrieval alone 19, 18, 18, 17, 17.
DENSE_FLOOR = 0.53
LEXICAL_WEIGHT = 0.05
# Exact lookups keep places of their own beside the ranked hits: when the query holds an exact term (an identifier,
# number, path or quoted phrase; with an embedder also a word found in at most RARE_ROWS rows of the lineage's index),
# the best LEXICAL_PLACES messages by BM25 among the passages holding one as written (an identifier, number, path or
# phrase before a rare word) are placed from position LEXICAL_PLACE_AT on (0-based; a message already ahead stays
# there). A passage holding the query's exact term is among the hits whatever the model scores it, or, lexically,
# whatever the question's other words match (they match at a word start: ``back`` begins ``backoff``). Measured on
# the paraphrase corpus through the real engine with all-MiniLM-L6-v2 (benchmarks/recall/paraphrase_bench.py, FINDINGS
# 20): each fact asked in its own words 36 / 36 with places, 26 / 36 without; asked in other words, 2 places at 1
# answered 23 / 36 at 16K and 24 / 36 at 64K (as many as without places), 1 place 22 and 23, 1 false "found" in 10
# (0 without). A rarity bound of 1 or 20 rows answered as 5 does. Lexically (FINDINGS 21): 14 / 36 at 16K and 15 /
# 36 at 64K with places, 13 and 14 without (``Why did we back out a41f9c2?`` lost to ``backoff``).
LEXICAL_PLACES = 2
LEXICAL_PLACE_AT = 1
RARE_ROWS = 5
PLACE_CANDIDATES = 20  # messages matching an exact term looked at for one holding it as written
CONTEXT_LINES = 1  # a hit ranked by meaning shows its best line and this many lines of the message on each side
PASSAGES_PER_HIT = 4  # passages ranked per hit asked for: several passages of one message make one hit


@dataclass(frozen=True)
class Hit:
    """One search result: where it is (``ref``, ``line``), what it is, and what paging it in costs."""

    ref: str
    position: int
    score: float
    weak: bool
    role: str
    tool_name: str | None
    arguments: str | None
    line: int
    first_line: int
    last_line: int
    snippet: str
    tokens: int

    def to_dict(self) -> dict[str, object]:
        """Every field but ``position``, which only orders the hits (``ref`` names the message)."""
        return {key: value for key, value in asdict(self).items() if key != "position"}


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


def around(passage: Passage, best_line: int) -> Passage:
    """The passage's ``best_line`` (0-based in it) with ``CONTEXT_LINES`` of the message on each side: the
    answer-bearing lines at about half a passage's cost, so more hits fit one call's budget."""
    lines = passage.entry.text.split("\n")
    line = passage.first_line + best_line
    first, last = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    return Passage(passage.entry, first, last, "\n".join(lines[first - 1:last]))


def make_hit(passage: Passage, score: float, weak: bool, query: Query, best_line: int | None = None) -> Hit:
    """A hit for ``passage``: its lines (or, when the match is in the call that produced it, that call), redacted;
    ``line`` is the line of the match in the message; when ranking by meaning named the passage's ``best_line``
    (0-based), the hit is that line and its context (``around``). ``tokens`` is 0 until ``counted``."""
    entry = passage.entry
    if best_line is not None:
        line = passage.first_line + best_line
        passage = around(passage, best_line)
    text = passage_text(passage)
    span = locate(text, query.terms)
    if best_line is None:
        line = passage.first_line + (text.count("\n", 0, span[0]) if span else 0)
    if span is None and best_line is None and _call_only(entry, query):
        searchable = redact_text(entry.searchable)[0]  # the match is in the tool name or arguments: show that
        snippet = _snippet(searchable, locate(searchable, query.terms))
    else:
        snippet = text if len(text) <= SNIPPET_CHARS else _snippet(text, span)
    return Hit(entry.ref, entry.position, score, weak, entry.role, clip_redacted(entry.tool_name,
               ARGUMENTS_CHARS), clip_redacted(entry.arguments, ARGUMENTS_CHARS), line, passage.first_line,
               passage.last_line, snippet, 0)


def counted(hit: Hit, entry: Entry, count_text: CountText) -> Hit:
    """``hit`` with ``tokens``: the exact count of its whole message redacted (what expanding it costs)."""
    return replace(hit, tokens=count_text(message_text(entry)))


def _call_only(entry: Entry, query: Query) -> bool:
    """Whether the query matches the call that produced ``entry`` and nothing of its text."""
    call = "\n".join(part for part in (entry.tool_name, entry.arguments) if part)  # short: looked at first
    return any(term.pattern.search(call) for term in query.terms) and not any(
        term.pattern.search(entry.text) for term in query.terms)


def int_in_range(value: object, low: int, high: int) -> bool:
    """A real int (not a bool) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class _Matches:
    """The passages matching one query, best first by BM25, asked of FTS5 once for the most that one search reads
    (the ranking and the exact-lookup places read the same query's rows; FTS5 scores every match each time)."""

    def __init__(self, index: LineageIndex, query: Query) -> None:
        self.index, self.query = index, query
        self._rows: list[tuple[int, float]] = []
        self._all = False

    def first(self, count: int) -> list[tuple[int, float]]:
        """(passage number, BM25) of the best ``count`` matching passages."""
        if count > len(self._rows) and not self._all:
            wanted = max(count, PLACE_CANDIDATES * PASSAGES_PER_HIT)
            self._rows = self.index.lexical.search(self.query, wanted)
            self._all = len(self._rows) < wanted
        return self._rows[:count]


def _lexical(matches: _Matches, limit: int) -> dict[int, float]:
    """Passage number -> BM25 score of the best passage of each of (at least) ``limit`` messages."""
    best: dict[str, tuple[int, float]] = {}
    wanted = limit * PASSAGES_PER_HIT
    while True:
        found = matches.first(wanted)
        for number, score in found:
            ref = matches.index.passages[number].entry.ref
            if ref not in best:
                best[ref] = (number, score)
        if len(best) >= limit or len(found) < wanted:
            return dict(best.values())
        wanted *= 4


def _dense(index: LineageIndex, question: str, embedder: Embedder, limit: int) -> dict[int, tuple[float, int | None]]:
    """Passage number -> (best cosine of its units, the line of that unit) of the best ``limit * PASSAGES_PER_HIT``
    embedded passages ({} when the embedder cannot answer or refuses the question: the search goes on lexically)."""
    vectors = index.vectors(embedder)
    if not vectors.count:
        return {}
    try:
        (query_vector,) = embed_questions(embedder, [question])
    except EmbedderError:
        return {}
    return {} if query_vector is None else vectors.nearest(query_vector, limit * PASSAGES_PER_HIT)


def _fused(lexical: dict[int, float], dense: dict[int, float], floor: float = DENSE_FLOOR) \
        -> dict[int, tuple[float, bool]]:
    """Passage -> (score, weak). Dense-led: the cosine, plus a lexical bonus that saturates at the lexical floor
    (a shared identifier, path or number lifts a passage; chosen over reciprocal rank fusion on the paraphrase
    corpus, docs/recall.md). Weak when both signals are under their floors (``floor``: the model's cosine floor)."""
    fused = {}
    for number in {*lexical, *dense}:
        cosine, bm25 = dense.get(number, 0.0), lexical.get(number, 0.0)
        score = cosine + LEXICAL_WEIGHT * min(1.0, bm25 / LEXICAL_FLOOR)
        fused[number] = (score, cosine < floor and bm25 < LEXICAL_FLOOR)
    return fused


def _scored(lexical: dict[int, float], dense: dict[int, float], floor: float) -> dict[int, tuple[float, bool]]:
    """Passage -> (score, weak): fused when there are cosines (``_fused``), else BM25 alone, weak under its floor."""
    if dense:
        return _fused(lexical, dense, floor)
    return {number: (bm25, bm25 < LEXICAL_FLOOR) for number, bm25 in lexical.items()}


def matched_line(passage: Passage, query: Query) -> int | None:
    """The line of ``passage`` (0-based) holding the most weight of the query's distinct terms (the first of
    equals); None when no line holds one (the match was in the call that produced the message)."""
    best, found = 0.0, None
    for number, line in enumerate(passage.text.split("\n")):
        weight = sum(term.weight for term in query.terms if term.pattern.search(line))
        if weight > best:
            best, found = weight, number
    return found


Ranked = tuple[Passage, float, bool, int | None]


def exact_terms(index: LineageIndex, query: Query, rare_words: bool) -> tuple[Term, ...]:
    """The query's terms an exact lookup is made of: identifiers, numbers, paths and phrases (FTS5 matches their
    tokens, not the text as written), and with ``rare_words`` words in at most ``RARE_ROWS`` rows of the index (beside
    ranking by meaning, which does not weigh a word's rarity; BM25 does)."""
    return tuple(term for term in query.terms if term.kind != "word" or (
        rare_words and index.lexical.rows_matching(term, RARE_ROWS) <= RARE_ROWS))


def _held(passage: Passage, terms: tuple[Term, ...]) -> float:
    """The weight of the heaviest of ``terms`` that ``passage`` (or the call that produced its message, for its first
    passage) holds as written (``15%``, not any ``15``); 0 when it holds none."""
    call = [] if passage.first_line > 1 else [passage.entry.tool_name or "", passage.entry.arguments or ""]
    texts = (passage.text, *call)
    return max((term.weight for term in terms if any(term.pattern.search(text) for text in texts)), default=0.0)


def _holding(matches: _Matches, exact: tuple[Term, ...]) -> list[tuple[int, float]]:
    """(passage, BM25) of the best messages by the whole query whose passage holds an exact term as written (FTS5
    matched its tokens only: ``15`` for ``15%``), those holding an identifier, number, path or phrase before those
    holding only a rare word (``back`` begins ``backoff``; ``a41f9c2`` is the lookup); else of the best by the exact
    terms alone, as written if any."""
    for asked in (matches, _Matches(matches.index, Query(exact))):
        found = sorted(_lexical(asked, PLACE_CANDIDATES).items(), key=lambda item: (-item[1], item[0]))
        held = {number: _held(matches.index.passages[number], exact) for number, _bm25 in found}
        literal = sorted((item for item in found if held[item[0]]), key=lambda item: -held[item[0]])
        if literal:
            return literal
    return found


def _lexical_places(order: list[Ranked], matches: _Matches, lexical: dict[int, float], dense: dict[int, float],
                    floor: float) -> list[Ranked]:
    """``order`` with the best messages holding the query's exact terms placed from ``LEXICAL_PLACE_AT`` on (those
    already ahead stay); beside hits by meaning each is shown at its passage's line holding the most of the query's
    terms, lexically as the other hits (its passage)."""
    index, query = matches.index, matches.query
    exact = exact_terms(index, query, rare_words=bool(dense)) if LEXICAL_PLACES else ()
    if not exact:
        return order
    for slot, (number, bm25) in enumerate(_holding(matches, exact)[:LEXICAL_PLACES]):
        passage = index.passages[number]
        at = next((i for i, item in enumerate(order) if item[0].entry.ref == passage.entry.ref), len(order))
        cosine = {number: dense.get(number, 0.0)} if dense else {}
        score, weak = _scored({number: max(bm25, lexical.get(number, 0.0))}, cosine, floor)[number]
        placed = (passage, round(score, 4), weak, matched_line(passage, query) if dense else None)
        order = [item for i, item in enumerate(order) if i != at]
        order.insert(min(at, LEXICAL_PLACE_AT + slot), placed)
    return order


def ranked(entries: Sequence[Entry], query: Query, limit: int, question: str = "",
           embedder: Embedder | None = None) -> list[Ranked]:
    """The best passage of each of the ``limit`` best of the lineage's messages ``entries``: (passage, score, weak,
    its best line by meaning)."""
    if not entries:
        return []
    index = lineage_index(entries, embedder)
    matches = _Matches(index, query)
    lexical = _lexical(matches, limit)
    dense = _dense(index, question, embedder, limit) if embedder is not None else {}
    cosines = {number: cosine for number, (cosine, _line) in dense.items()}
    floor = weak_below(embedder) if embedder is not None else None
    floor = DENSE_FLOOR if floor is None else floor
    best: dict[str, Ranked] = {}
    for number, (score, weak) in _scored(lexical, cosines, floor).items():
        passage = index.passages[number]
        kept = best.get(passage.entry.ref)
        if kept is None or round(score, 4) > kept[1] or (round(score, 4) == kept[1] and
                                                         passage.first_line < kept[0].first_line):
            line = dense[number][1] if number in dense else None
            best[passage.entry.ref] = (passage, round(score, 4), weak, line)  # ordered by the score the hit shows
    order = sorted(best.values(), key=lambda item: (-item[1], item[0].entry.position, item[0].first_line))
    return _lexical_places(order, matches, lexical, cosines, floor)[:limit]


def uncounted(source: RecallSource, query: str, limit: int,
              embedder: Embedder | None = None) -> list[tuple[Hit, Entry]]:
    """The best ``limit`` hits for ``query`` in the lineage behind ``source`` (``tokens`` not counted yet: the tool
    counts only those its answer holds) with their messages: lexical, or hybrid with an ``embedder`` (ranked by
    meaning over the passages embedded so far)."""
    if not int_in_range(limit, 1, MAX_LIMIT):
        raise UserInputError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    parsed = parse_query(query)
    entries = list(source.entries())
    return [(make_hit(passage, score, weak, parsed, line), passage.entry)
            for passage, score, weak, line in ranked(entries, parsed, limit, query, embedder)]


def search(source: RecallSource, query: str, limit: int, count_text: CountText,
           embedder: Embedder | None = None) -> list[Hit]:
    """The best ``limit`` hits for ``query`` in the lineage behind ``source``, each with its message's exact cost."""
    return [counted(hit, entry, count_text) for hit, entry in uncounted(source, query, limit, embedder)]
