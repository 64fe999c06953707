"""Vectors of a lineage's passages, computed off the request path, and cosine ranking over them.

Why a background worker: embedding 400 passages takes seconds on a CPU model; a search must not wait for it.
The compaction that takes a region out queues its passages (and a search that finds passages without vectors
queues those); one worker thread embeds them in batches into a process cache, and a lineage's index takes its
vectors from there: a search ranks by meaning over the passages embedded so far (the rest still rank lexically).
Vectors are keyed by the embedder's name (a changed model never mixes vectors) and the digest of the embedded
text (a passage re-cut or edited is embedded anew). A passage the embedder refuses even in parts (None: longer than
the server's window, ``embedding/refusals.py``) is remembered as refused in memory, not asked again, and ranks
lexically. In memory vectors are numpy rows, normalised (at this scale a matrix product is enough:
benchmarks/recall_latency_bench.py), and with a store (``keep_vectors_in``: the project's ``.baton/cache/vectors/``)
they are also kept on disk, so a restarted process takes them from there instead of the embedder.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cachetools import LRUCache

from baton_engine.embedding import Embedder, EmbedderError
from baton_engine.recall.passages import Passage
from baton_engine.recall.vector_store import VectorStore

LOGGER = logging.getLogger("baton_engine.recall")
BATCH = 16
# Vectors of passages by (embedder, digest of the embedded text): a compaction embeds the region it takes out before
# any lineage index holds it (with Hermes' store bound, the rows reach the lineage only after the rotation), and a
# lineage index takes its vectors from here (None: the embedder refused that passage). 50,000 vectors of 384 float32
# are 77 MB.
CACHE_VECTORS = 50_000
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


def embedded_text(passage: Passage) -> str:
    """What is embedded for ``passage``: its lines."""
    return passage.text


def _key(name: str, passage: Passage) -> tuple[str, bytes]:
    return name, hashlib.blake2b(embedded_text(passage).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _cached(name: str, passages: Sequence[tuple[int, Passage]]) -> list[tuple[int, Any]]:
    """(number, vector, or None when refused) of those of the numbered ``passages`` whose answer is cached."""
    with _CACHE_LOCK:
        return [(number, _CACHE[key]) for number, passage in passages if (key := _key(name, passage)) in _CACHE]


def _stored(name: str, missing: list[Passage], store: VectorStore) -> list[Passage]:
    """Take the vectors of ``missing`` that ``store`` holds into the cache; the passages still missing."""
    np = _numpy()
    digests = {p: store.digest(embedded_text(p)) for p in missing}
    found = store.get(name, list(set(digests.values())))
    with _CACHE_LOCK:
        for passage, digest in digests.items():
            if digest in found:
                _CACHE[_key(name, passage)] = np.frombuffer(found[digest], dtype=np.float32)
    return [p for p in missing if digests[p] not in found]


def embed_passages(passages: Sequence[Passage], embedder: Embedder) -> None:
    """Embed the passages not cached yet (from the store when it holds them), a batch at a time (the worker's
    job); stops at the first error."""
    np = _numpy()
    with _CACHE_LOCK:
        missing = list({p: None for p in passages if _key(embedder.name, p) not in _CACHE})
        store = _STORE
    if store is not None and missing:
        missing = _stored(embedder.name, missing, store)
    try:
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            answers = embedder.embed([embedded_text(p) for p in batch])
            embedded = [p for p, answer in zip(batch, answers, strict=True) if answer is not None]
            vectors = np.asarray([answer for answer in answers if answer is not None], dtype=np.float32)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
            with _CACHE_LOCK:
                for passage in batch:
                    _CACHE[_key(embedder.name, passage)] = None  # refused, unless embedded just below
                for passage, vector in zip(embedded, vectors, strict=True):
                    _CACHE[_key(embedder.name, passage)] = vector
            if store is not None and embedded:
                store.put(embedder.name, [(store.digest(embedded_text(p)), v.tobytes())
                                          for p, v in zip(embedded, vectors, strict=True)])
    except EmbedderError as exc:
        LOGGER.warning("recall: embedding stopped (%s); lexical ranking until the embedder answers", exc)


def queue(passages: Sequence[Passage], embedder: Embedder) -> None:
    """Embed ``passages`` in the background (a compaction's region: off the request path)."""
    _WORKER.submit(embed_passages, list(passages), embedder)


class Vectors:
    """Normalised vectors of those of a lineage's passages that are embedded, for one embedder (from the cache)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._numbers: list[int] = []
        self._rows: list[Any] = []
        self._refused: set[int] = set()  # passage numbers the embedder refused: ranked lexically
        self._matrix: Any = None
        self._order: Any = None  # the passage number of each row of ``_matrix``
        self._lock = threading.Lock()
        self._pending = False

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._rows)

    def update(self, passages: Sequence[Passage], embedder: Embedder) -> None:
        """Take the cached vectors of the passages not held yet; queue the rest for the worker (once at a time)."""
        with self._lock:
            if self._answered < len(passages):  # numbers are distinct passage numbers: equal counts, all held
                held = {*self._numbers, *self._refused}
                self._take(_cached(self.name, [(n, p) for n, p in enumerate(passages) if n not in held]))
            missing = self._answered < len(passages) and not self._pending
            if missing:
                self._pending = True
        if missing:
            _WORKER.submit(self._fill, list(passages), embedder)

    @property
    def _answered(self) -> int:
        return len(self._rows) + len(self._refused)

    def _take(self, found: list[tuple[int, Any]]) -> None:
        for number, vector in found:
            if vector is None:
                self._refused.add(number)
                continue
            self._numbers.append(number)
            self._rows.append(vector)
            self._matrix = None

    def _fill(self, passages: Sequence[Passage], embedder: Embedder) -> None:
        try:
            embed_passages(passages, embedder)
        finally:
            with self._lock:
                self._pending = False
                held = {*self._numbers, *self._refused}
                self._take(_cached(self.name, [(n, p) for n, p in enumerate(passages) if n not in held]))

    def nearest(self, query: Sequence[float], count: int) -> dict[int, float]:
        """Passage number -> cosine with the query, for the ``count`` embedded passages nearest to it (a matrix
        product and a partial sort: 12,000 passages in a few ms)."""
        np = _numpy()
        with self._lock:
            if self._matrix is None:
                self._matrix = np.vstack(self._rows) if self._rows else np.zeros((0, len(query)), np.float32)
                self._order = np.asarray(self._numbers, dtype=np.int64)
            matrix, numbers = self._matrix, self._order
        vector = np.asarray(query, dtype=np.float32)
        scores = matrix @ (vector / max(float(np.linalg.norm(vector)), 1e-12))
        if len(scores) > count:
            top = np.argpartition(-scores, count - 1)[:count]
            numbers, scores = numbers[top], scores[top]
        return dict(zip(numbers.tolist(), scores.tolist(), strict=True))


def wait_idle() -> None:
    """Block until the worker has embedded everything queued so far (benchmarks and tests)."""
    _WORKER.submit(lambda: None).result()
