"""Parse a recall query into weighted terms: quoted phrases, paths, identifiers and plain words.

Why not FTS5's tokenizer: it splits ``src/a/b.py`` into four words and ``retry_budget`` into two,
which is exactly what an agent looks for after a compaction (a path it edited, a hash it saw). Here
such tokens stay whole and weigh more than a plain word. Matching is case-insensitive and anchored
at a word start (``cache`` finds ``caches``, a short hash finds the full one).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from baton_engine.errors import UserInputError

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
TermKind = Literal["phrase", "path", "identifier", "word"]
WEIGHTS: dict[str, float] = {"phrase": 3.0, "path": 3.0, "identifier": 2.5, "word": 1.0}

_PHRASE_RE = re.compile(r'"([^"]+)"|`([^`]+)`')
_STRIP = "\"'`,;:()[]{}<>!?"
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_HEX_RE = re.compile(r"^(?=.*\d)(?=.*[a-f])[0-9a-f]{7,64}$", re.IGNORECASE)
_NUMBER_RE = re.compile(r"\d")
_IDENT_RE = re.compile(r"^(?:\w+(?:[._:-]\w+)+|[A-Za-z]*[a-z][A-Z]\w*|\w*\d\w*)$")
_STOP_WORDS = frozenset(
    "a an and are as at be but by did do does for from had has have how i in is it its of on or that the "
    "then there this to was we were what when where which who why with you your about again did earlier".split()
)


@functools.lru_cache(maxsize=1024)
def _pattern(text: str) -> re.Pattern[str]:
    """A term's pattern, compiled once per text (a search tests it against hundreds of lines)."""
    body = r"\s+".join(re.escape(part) for part in text.split())
    return re.compile(r"(?<![0-9A-Za-z_])" + body, re.IGNORECASE)


@dataclass(frozen=True)
class Term:
    kind: TermKind
    text: str

    @property
    def weight(self) -> float:
        return WEIGHTS[self.kind]

    @property
    def pattern(self) -> re.Pattern[str]:
        return _pattern(self.text)


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]


def _classify(token: str) -> Term | None:
    token = token.strip(_STRIP).rstrip(".")
    if "/" in token and token.strip("/"):
        return Term("path", token)
    if _UUID_RE.match(token) or _HEX_RE.match(token) or _IDENT_RE.match(token) or _NUMBER_RE.search(token):
        return Term("identifier", token)  # a number with its unit or sign (``15%``, ``$4,000``) is one too
    word = token.lower()
    if len(word) < 2 or word in _STOP_WORDS or not re.search(r"\w", word):
        return None
    return Term("word", word)


def parse_query(text: object) -> Query:
    """The terms of ``text``, deduplicated in order; raises ``UserInputError`` on unusable input."""
    if not isinstance(text, str) or not text.strip():
        raise UserInputError("query must be a non-empty string: words, identifiers, paths or \"quoted phrases\"")
    if len(text) > MAX_QUERY_CHARS:
        raise UserInputError(f"query has {len(text)} characters; the limit is {MAX_QUERY_CHARS}")
    terms: list[Term] = []
    for match in _PHRASE_RE.finditer(text):
        phrase = " ".join((match.group(1) or match.group(2)).split())
        if phrase:
            terms.append(Term("phrase", phrase))
    for token in _PHRASE_RE.sub(" ", text).split():
        term = _classify(token)
        if term is not None:
            terms.append(term)
    unique: list[Term] = []
    for term in terms:
        if all(term.text.lower() != kept.text.lower() for kept in unique):
            unique.append(term)
    if not unique:
        raise UserInputError("query has no searchable term (only stop words or punctuation)")
    if len(unique) > MAX_TERMS:
        raise UserInputError(f"query has {len(unique)} terms; the limit is {MAX_TERMS}")
    return Query(tuple(unique))
