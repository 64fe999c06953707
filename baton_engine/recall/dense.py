"""Vectors of a lineage's passages, computed off the request path, and cosine ranking over them.

Why each line too: a one-line fact in a passage of filler (``DB_PORT=6543`` among five log lines) is diluted in
the passage's vector (cosine 0.25 to a paraphrased question with all-MiniLM-L6-v2) and clear in its own line's.
A passage's units are its lines that hold a word (``units``); its score is the best of its lines' cosines, and the
best line is the answer-bearing one (measured on the paraphrase corpus: benchmarks/recall/paraphrase_bench.py,
docs/recall.md; the passage's own vector beside its lines, or the whole message's, ranked worse).

Why a background worker: embedding 400 passages takes seconds on a CPU model; a search must not wait for it.
The compaction that takes a region out queues its passages (and a search that finds passages without vectors
queues those); one worker thread embeds them in batches into a process cache, and a lineage's index takes its
vectors from there: a search ranks by meaning over the passages embedded so far (the rest still rank lexically).
Vectors are keyed by the embedder's name (a changed model never mixes vectors) and the digest of the embedded
text (a passage re-cut or edited is embedded anew). A unit the embedder refuses even in parts (None: longer than
the server's window, ``embedding/refusals.py``) is remembered as refused in memory and not asked again; a passage
ranks by its other units, lexically when it has none. In memory a lineage's vectors are the rows of a ``RowIndex``
(``vector_index.py``: exact numpy up to 100,000 rows, an HNSW graph above), and with a store (``keep_vectors_in``: the
project's ``.baton/cache/vectors/``) they are also kept on disk, so a restarted process takes them from there
instead of the embedder.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from cachetools import LRUCache

from baton_engine.embedding import Embedder, EmbedderError
from baton_engine.recall import vector_index
from baton_engine.recall.passages import PASSAGE_LINES, Passage
from baton_engine.recall.vector_index import RowIndex
from baton_engine.recall.vector_store import VectorStore

LOGGER = logging.getLogger("baton_engine.recall")
BATCH = 16
# Vectors of units by (embedder, digest of the embedded text): a compaction embeds the region it takes out before
# any lineage index holds it (with Hermes' store bound, the rows reach the lineage only after the rotation), and a
# lineage index takes its vectors from here (None: the embedder refused that text). A passage is up to 6 units (its
# lines; a line repeated anywhere is one vector): 100,000 vectors of 384 float32 are 154 MB.
CACHE_VECTORS = 100_000
MIN_UNIT_WORD_CHARS = 3  # a line with fewer letters and digits (``}``, ``----``) is no unit of its own
_CACHE: LRUCache[tuple[str, bytes], Any] = LRUCache(maxsize=CACHE_VECTORS)
_CACHE_LOCK = threading.Lock()
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-embed")
_STORE: VectorStore | None = None  # the process's vector store on disk, when one is in use


def use_store(store: VectorStore | None) -> None:
    """Keep vectors in ``store`` too (None: memory only); a process uses one store at a time."""
    global _STORE
    with _CACHE_LOCK:
        _STORE = store


def keep_vectors_in(directory: Path) -> None:
    """Use the store in ``directory`` (a project's ``.baton/cache/vectors``); memory only when it cannot open."""
    try:
        use_store(VectorStore(directory))
    except (OSError, sqlite3.Error) as exc:
        LOGGER.warning("recall: vector store not opened (%s); vectors in memory only", type(exc).__name__)
        use_store(None)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise EmbedderError("ranking by meaning needs numpy: pip install 'baton-engine[embed]'") from None
    return numpy


class Unit(NamedTuple):
    """A text embedded for a passage: one of its lines (``line``: 0-based in the passage), or the passage itself
    (``line`` None) when no line of it holds a word."""

    line: int | None
    text: str


def units(passage: Passage) -> tuple[Unit, ...]:
    """What is embedded for ``passage``: each of its lines holding a word (stripped: indentation is no meaning; a
    line repeated in the passage once), else its text."""
    worded: dict[str, int] = {}
    for number, line in enumerate(passage.text.split("\n")):
        if sum(ch.isalnum() for ch in line) >= MIN_UNIT_WORD_CHARS:
            worded.setdefault(line.strip(), number)
    return tuple(Unit(number, text) for text, number in worded.items()) or (Unit(None, passage.text),)


def _key(name: str, text: str) -> tuple[str, bytes]:
    return name, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def cached_vector(name: str, text: str) -> Any:
    """The cached vector of ``text`` for embedder ``name`` (None: not embedded, or refused)."""
    with _CACHE_LOCK:
        return _CACHE.get(_key(name, text))


def _cached(name: str, passages: Sequence[tuple[int, Passage]]) -> list[tuple[int, Passage, list[Any]]]:
    """(number, passage, its units' vectors: None for a unit the embedder refused) of those of the numbered
    ``passages`` whose units are all answered."""
    found = []
    with _CACHE_LOCK:
        for number, passage in passages:
            keys = [_key(name, unit.text) for unit in units(passage)]
            if all(key in _CACHE for key in keys):
                found.append((number, passage, [_CACHE[key] for key in keys]))
    return found


def _stored(name: str, missing: list[str], store: VectorStore) -> list[str]:
    """Take the vectors of the ``missing`` texts that ``store`` holds into the cache; the texts still missing."""
    np = _numpy()
    digests = {text: store.digest(text) for text in missing}
    found = store.get(name, list(set(digests.values())))
    with _CACHE_LOCK:
        for text, digest in digests.items():
            if digest in found:
                _CACHE[_key(name, text)] = np.frombuffer(found[digest], dtype=np.float32)
    return [text for text in missing if digests[text] not in found]


def embed_passages(passages: Sequence[Passage], embedder: Embedder) -> None:
    """Embed the units of ``passages`` not cached yet (from the store when it holds them), a batch at a time (the
    worker's job); stops at the first error."""
    np = _numpy()
    with _CACHE_LOCK:
        missing = list({u.text: None for p in passages for u in units(p) if _key(embedder.name, u.text) not in _CACHE})
        store = _STORE
    if store is not None and missing:
        missing = _stored(embedder.name, missing, store)
    try:
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            answers = embedder.embed(batch)
            embedded = [text for text, answer in zip(batch, answers, strict=True) if answer is not None]
            vectors = np.asarray([answer for answer in answers if answer is not None], dtype=np.float32)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
            with _CACHE_LOCK:
                for text in batch:
                    _CACHE[_key(embedder.name, text)] = None  # refused, unless embedded just below
                for text, vector in zip(embedded, vectors, strict=True):
                    _CACHE[_key(embedder.name, text)] = vector
            if store is not None and embedded:
                store.put(embedder.name, [(store.digest(text), v.tobytes()) for text, v in zip(embedded, vectors,
                                                                                                strict=True)])
    except EmbedderError as exc:
        LOGGER.warning("recall: embedding stopped (%s); lexical ranking until the embedder answers", exc)


def queue(passages: Sequence[Passage], embedder: Embedder) -> None:
    """Embed ``passages`` in the background (a compaction's region: off the request path)."""
    _WORKER.submit(embed_passages, list(passages), embedder)


def embedded_and_pending(name: str, passages: Sequence[Passage]) -> tuple[int, int]:
    """(units of ``passages`` with a vector in the process cache, units still to embed) for embedder ``name``; a
    unit the embedder refused counts in neither."""
    embedded = pending = 0
    with _CACHE_LOCK:
        for passage in passages:
            for unit in units(passage):
                key = _key(name, unit.text)
                if key not in _CACHE:
                    pending += 1
                elif _CACHE[key] is not None:
                    embedded += 1
    return embedded, pending


class Vectors:
    """Normalised vectors of the units of those of a lineage's passages that are embedded, for one embedder (from
    the cache), as rows of a ``RowIndex``; a passage's score is its best row's cosine."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._held: set[int] = set()  # passage numbers whose rows are taken
        self._index: RowIndex | None = None
        self._passage_of: list[int] = []  # each row's passage number
        self._line_of: list[int | None] = []  # each row's line in its passage (0-based; None: the passage itself)
        self._with_rows = 0  # passages with at least one row
        self._lock = threading.Lock()
        self._pending = False

    @property
    def count(self) -> int:
        """Passages with a vector (a refused one has none)."""
        with self._lock:
            return self._with_rows

    @property
    def rows(self) -> int:
        """Rows held (a passage's embedded lines)."""
        with self._lock:
            return len(self._passage_of)


    @property
    def nbytes(self) -> int:
        """Bytes of the rows and their graph (not the process cache's vectors)."""
        with self._lock:
            index = self._index
        return index.nbytes if index is not None else 0

    def update(self, passages: Sequence[Passage], embedder: Embedder) -> None:
        """Take the cached vectors of the passages not held yet; queue the rest for the worker (once at a time)."""
        with self._lock:
            if len(self._held) < len(passages):  # held are distinct passage numbers: equal counts, all held
                self._take(_cached(self.name, [(n, p) for n, p in enumerate(passages) if n not in self._held]))
            missing = len(self._held) < len(passages) and not self._pending
            if missing:
                self._pending = True
        if missing:
            _WORKER.submit(self._fill, list(passages), embedder)

    def _take(self, found: list[tuple[int, Passage, list[Any]]]) -> None:
        taken = []
        for number, passage, vectors in found:
            self._held.add(number)
            rows = [(unit.line, vector) for unit, vector in zip(units(passage), vectors, strict=True)
                    if vector is not None]  # a refused unit has no row; a passage with none ranks lexically
            if rows:
                self._with_rows += 1
                self._passage_of.extend(number for _ in rows)
                self._line_of.extend(line for line, _ in rows)
                taken.extend(vector for _, vector in rows)
        if taken:
            np = _numpy()
            if self._index is None:
                self._index = RowIndex(np)
            self._index.add(np.vstack(taken))

    def _fill(self, passages: Sequence[Passage], embedder: Embedder) -> None:
        try:
            embed_passages(passages, embedder)
        finally:
            with self._lock:
                self._pending = False
                self._take(_cached(self.name, [(n, p) for n, p in enumerate(passages) if n not in self._held]))

    def nearest(self, query: Sequence[float], count: int) -> dict[int, tuple[float, int | None]]:
        """Passage number -> (its best unit's cosine with the query, that unit's line in the passage or None), for
        the ``count`` embedded passages nearest to it: the nearest ``count * PASSAGE_LINES`` rows hold every row
        ranked above the last of them (a passage has at most that many rows), so taking each passage's first row
        among them is exact when the rows are ranked exactly."""
        np = _numpy()
        with self._lock:
            index, passage_of, line_of = self._index, self._passage_of, self._line_of
        if index is None:
            return {}
        vector = np.asarray(query, dtype=np.float32)
        rows, cosines = index.nearest(vector / max(float(np.linalg.norm(vector)), 1e-12), count * PASSAGE_LINES)
        found: dict[int, tuple[float, int | None]] = {}
        for row, cosine in zip(rows.tolist(), cosines.tolist(), strict=True):
            number = passage_of[row]
            if number not in found:
                found[number] = (cosine, line_of[row])
                if len(found) == count:
                    break
        return found


def wait_idle() -> None:
    """Block until the worker has embedded everything queued so far and the graph holds its rows (benchmarks and
    tests)."""
    _WORKER.submit(lambda: None).result()
    vector_index.wait_idle()
