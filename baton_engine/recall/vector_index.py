"""A lineage's vector rows and the rows nearest to a question: exact numpy up to a size, an HNSW index above it.

Why exact first: an HNSW graph (usearch) finds the rows nearest to a row-like query (a line perturbed by noise:
recall@32 about 97%), but a real question sits far from every line (its best cosines 0.3-0.6), and there the graph
loses the best row: of the paraphrase corpus's 46 questions over its 17,200 real all-MiniLM-L6-v2 line vectors, the
default graph (connectivity 16, expansion 64) found the exact best row for 63% and the exact top 10 at 87%, and
recall answered 9 of 36 against 18 of 36 ranked exactly (``paraphrase_bench.py --retrieval``, FINDINGS 22). An
exact matrix product over float32 rows costs the memory traffic of every row on each question: 3.8 / 24 ms p50 /
p99 at 19,115 rows and 12.3 / 34.5 ms at 70,342 (``argpartition`` included, load 3.9 on 2 cores), inside the 50 ms
a search may take; so rows are ranked exactly up to ``EXACT_MAX_ROWS``, and always when usearch is not installed.
Above it (``pip install 'baton-engine[vectors]'``) one background thread adds the rows to a graph searched wide
(connectivity 32, expansion 1,024: the best row for 89%, the top 10 at 98%, 16 of 36 answered; about 1 ms a
question), its candidates' cosines recomputed from the float32 rows; the graph keeps its vectors in float16 (half
the memory of float32), rows newer than it are ranked exactly beside it, so a search never waits for the graph and
never misses a new row.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

LOGGER = logging.getLogger("baton_engine.recall")
EXACT_MAX_ROWS = 100_000
GRAPH_CHUNK = 4096  # rows added to the graph per step of the background thread
GRAPH_CONNECTIVITY, GRAPH_EXPANSION_ADD, GRAPH_EXPANSION_SEARCH = 32, 256, 1024
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-vector-index")


def graph_available() -> bool:
    return importlib.util.find_spec("usearch") is not None


class RowIndex:
    """Normalised float32 rows in one contiguous matrix (grown by doubling), and their HNSW graph once there are
    more than ``EXACT_MAX_ROWS`` (when usearch is installed)."""

    def __init__(self, numpy: Any) -> None:
        self._np = numpy
        self._matrix: Any = None
        self._size = 0
        self._graphed = 0  # rows [0, _graphed) are in the graph
        self._graph: Any = None
        self._building = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return self._size

    @property
    def graphed(self) -> int:
        with self._lock:
            return self._graphed

    @property
    def nbytes(self) -> int:
        """Bytes held: the matrix's used rows and the graph's memory."""
        with self._lock:
            rows = self._size * self._matrix.shape[1] * 4 if self._matrix is not None else 0
            return rows + (int(self._graph.memory_usage) if self._graph is not None else 0)

    def add(self, rows: Any) -> None:
        """Append ``rows`` (n x d float32, normalised); the graph takes them in the background when due."""
        np = self._np
        if not len(rows):
            return
        with self._lock:
            if self._matrix is None:
                self._matrix = np.empty((max(1024, len(rows)), rows.shape[1]), dtype=np.float32)
            elif self._size + len(rows) > len(self._matrix):
                grown = np.empty((max(2 * len(self._matrix), self._size + len(rows)), self._matrix.shape[1]),
                                 dtype=np.float32)
                grown[:self._size] = self._matrix[:self._size]
                self._matrix = grown
            self._matrix[self._size:self._size + len(rows)] = rows
            self._size += len(rows)
            due = self._size > EXACT_MAX_ROWS and not self._building and graph_available()
            if due:
                self._building = True
        if due:
            _WORKER.submit(self._build)

    def _build(self) -> None:
        """Add the rows not in the graph yet, a chunk at a time (the graph answers searches meanwhile)."""
        try:
            from usearch.index import Index
            while True:
                with self._lock:
                    start, stop = self._graphed, min(self._size, self._graphed + GRAPH_CHUNK)
                    if start >= stop:  # decided under the lock: a row added after this gets a build of its own
                        self._building = False
                        return
                    matrix = self._matrix
                    if self._graph is None:
                        self._graph = Index(ndim=matrix.shape[1], metric="ip", dtype="f16",
                                            connectivity=GRAPH_CONNECTIVITY, expansion_add=GRAPH_EXPANSION_ADD,
                                            expansion_search=GRAPH_EXPANSION_SEARCH)
                    graph = self._graph
                graph.add(self._np.arange(start, stop), matrix[start:stop], threads=1)
                with self._lock:
                    self._graphed = stop
        except (ImportError, RuntimeError, ValueError) as exc:  # the graph is an accelerator: exact ranking stays
            LOGGER.warning("recall: vector graph not built (%s); exact ranking", type(exc).__name__)
            with self._lock:
                self._building = False

    def nearest(self, query: Any, count: int) -> tuple[Any, Any]:
        """(row numbers, cosines) of the ``count`` rows nearest to ``query`` (normalised), best first: the graph's
        candidates for the rows it holds and every row newer than it, all scored exactly."""
        np = self._np
        with self._lock:
            matrix, size, graphed, graph = self._matrix, self._size, self._graphed, self._graph
        if not size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        tail = matrix[graphed:size] @ query
        rows, cosines = np.arange(graphed, size), tail
        if graphed:
            keys = np.asarray(graph.search(query, min(count, graphed), threads=1).keys, dtype=np.int64)
            keys = keys[keys < graphed]  # a row being added right now is also in the exact tail
            rows = np.concatenate([keys, rows])
            cosines = np.concatenate([matrix[keys] @ query, cosines])  # the float32 rows' cosines, not float16's
        if len(rows) > count:
            top = np.argpartition(-cosines, count - 1)[:count]
            rows, cosines = rows[top], cosines[top]
        order = np.argsort(-cosines, kind="stable")
        return rows[order], cosines[order]


def wait_idle() -> None:
    """Block until the graph holds every row added so far (benchmarks and tests)."""
    _WORKER.submit(lambda: None).result()
