"""Exact numpy ranking against vector index libraries (issue 46 item 2: measure before choosing).

Rows of 384 float32 (all-MiniLM-L6-v2's size), normalised: a vector store's real vectors (``--vectors DIR``, tiled
with a little noise up to the row count) or seeded random ones; queries are rows perturbed by noise (a question
near some lines), or with ``--questions-url URL`` the paraphrase corpus's 46 real questions embedded by that
server (a question sits far from every line: the case recall meets, where a graph loses rows it finds for a
row-like query). For each row count: the time of one query's top-k (k = 32) by exact numpy (float32 matrix
product then ``argpartition``), and by each installed library's index (usearch HNSW over f32, f16 and i8, as
shipped in ``recall/vector_index.py``, and its exact search, hnswlib, faiss flat and HNSW), their build time (one
thread), bytes per 10,000 rows (the matrix's, or the index serialised), recall@k against the exact answer, and how
often the exact best row is found (best@1). A library not installed is skipped.

Run: ``python benchmarks/recall/vector_index_bench.py [--rows 10000 70000 200000] [--queries 200] [--vectors DIR]
[--questions-url URL]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from benchmarks.harness import paraphrase_corpus as corpus  # noqa: E402

from baton_engine.recall import vector_index  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "real questions over 17,200 real rows: the exact best row found 63% (usearch defaults), 91% (as shipped)",
    "target": "exact below EXACT_MAX_ROWS (100,000), a wide-searched graph above",
    "findings": 22,
    "test": None,
}

DIMENSIONS = 384
K = 32


def _stored(directory: Path, embedder: str) -> Any:
    """Every vector of ``embedder`` in the vector store in ``directory`` (a real model's lines: clustered as real
    rows are)."""
    with sqlite3.connect(directory / "vectors.sqlite3") as db:
        blobs = [row[0] for row in db.execute("SELECT vector FROM vectors WHERE embedder = ?", (embedder,))]
    return np.vstack([np.frombuffer(blob, dtype=np.float32) for blob in blobs if len(blob) == 4 * DIMENSIONS])


def _questions(url: str) -> Any:
    """The paraphrase corpus's questions (answerable and absent) as the server at ``url`` embeds them."""
    import httpx

    asked = [fact.question for fact in corpus.FACTS] + list(corpus.ABSENT)
    answer = httpx.post(f"{url.rstrip('/')}/v1/embeddings", json={"model": "questions", "input": asked}, timeout=120)
    vectors = np.array([item["embedding"] for item in answer.json()["data"]], dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _data(rows: int, queries: int, real: Any | None) -> tuple[Any, Any]:
    """``rows`` normalised rows and ``queries`` questions near some of them: the real vectors tiled with a little
    noise when given, else seeded random ones."""
    rng = np.random.default_rng(46)
    if real is None:
        matrix = rng.standard_normal((rows, DIMENSIONS)).astype(np.float32)
    else:
        matrix = real[rng.integers(0, len(real), rows)] + 0.02 * rng.standard_normal((rows, DIMENSIONS)).astype(
            np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    asked = matrix[rng.integers(0, rows, queries)] + 0.05 * rng.standard_normal((queries, DIMENSIONS)).astype(
        np.float32) * (1 if real is not None else 16)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    return matrix, asked


Search = Callable[[Any], Any]


def _exact(matrix: Any) -> tuple[Search, int]:
    def search(query: Any) -> Any:
        scores = matrix @ query
        return np.argpartition(-scores, K - 1)[:K]
    return search, matrix.nbytes


def _usearch(matrix: Any, dtype: str, exact: bool = False, expansion: int | None = None,
             connectivity: int | None = None, expansion_search: int | None = None) -> tuple[Search, int]:
    from usearch.index import Index
    index = Index(ndim=DIMENSIONS, metric="ip", dtype=dtype, expansion_add=expansion, connectivity=connectivity,
                  expansion_search=expansion_search or expansion)
    index.add(np.arange(len(matrix)), matrix, threads=1)
    return (lambda query: index.search(query, K, exact=exact, threads=1).keys), len(index.save())


def _hnswlib(matrix: Any) -> tuple[Search, int]:
    import hnswlib
    index = hnswlib.Index(space="ip", dim=DIMENSIONS)
    index.init_index(max_elements=len(matrix), ef_construction=100, M=16)
    index.set_num_threads(1)
    index.add_items(matrix, np.arange(len(matrix)))
    index.set_ef(64)
    return (lambda query: index.knn_query(query, k=K)[0][0]), index.index_file_size()


def _faiss(matrix: Any, kind: str) -> tuple[Search, int]:
    import faiss
    faiss.omp_set_num_threads(1)
    index = faiss.IndexFlatIP(DIMENSIONS) if kind == "flat" else faiss.IndexHNSWFlat(DIMENSIONS, 16,
                                                                                        faiss.METRIC_INNER_PRODUCT)
    index.add(matrix)
    return (lambda query: index.search(query[None, :], K)[1][0]), len(faiss.serialize_index(index))


ARMS: dict[str, tuple[str | None, Callable[[Any], tuple[Search, int]]]] = {
    "numpy exact f32": (None, _exact),
    "usearch HNSW f32": ("usearch", lambda m: _usearch(m, "f32")),
    "usearch HNSW f32, expansion 64": ("usearch", lambda m: _usearch(m, "f32", expansion=64)),
    "usearch HNSW f16": ("usearch", lambda m: _usearch(m, "f16")),
    "usearch HNSW f16, as shipped": ("usearch", lambda m: _usearch(
        m, "f16", expansion=vector_index.GRAPH_EXPANSION_ADD, connectivity=vector_index.GRAPH_CONNECTIVITY,
        expansion_search=vector_index.GRAPH_EXPANSION_SEARCH)),
    "usearch HNSW i8": ("usearch", lambda m: _usearch(m, "i8")),
    "usearch exact f16": ("usearch", lambda m: _usearch(m, "f16", exact=True)),
    "usearch exact i8": ("usearch", lambda m: _usearch(m, "i8", exact=True)),
    "hnswlib HNSW": ("hnswlib", _hnswlib),
    "faiss flat": ("faiss", lambda m: _faiss(m, "flat")),
    "faiss HNSW": ("faiss", lambda m: _faiss(m, "hnsw")),
}


def measure(rows: int, queries: int, real: Any | None = None, questions: Any | None = None) -> list[dict[str, Any]]:
    matrix, asked = _data(rows, queries, real)
    if questions is not None:
        asked = questions
    exact, _bytes = _exact(matrix)
    truth = [set(exact(q).tolist()) for q in asked]
    best = [int(np.argmax(matrix @ q)) for q in asked]
    found = []
    for name, (module, build) in ARMS.items():
        if module is not None and importlib.util.find_spec(module) is None:
            continue
        started = time.perf_counter()
        search, held = build(matrix if module else matrix.copy())
        built = time.perf_counter() - started
        times, hits, firsts = [], 0, 0
        for query, exact, first in zip(asked, truth, best, strict=True):
            started = time.perf_counter()
            keys = {int(k) for k in search(query)}
            times.append(time.perf_counter() - started)
            hits += len(exact & keys)
            firsts += first in keys
        times.sort()
        found.append({"arm": name, "rows": rows, "build_s": built, "p50_ms": 1000 * times[len(times) // 2],
                      "p99_ms": 1000 * times[min(len(times) - 1, round(0.99 * (len(times) - 1)))],
                      "recall": hits / (K * len(asked)), "best": firsts / len(asked),
                      "bytes_per_10k": held * 10_000 / rows})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 70_000, 200_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", type=Path, help="a vector store directory: its real vectors, tiled")
    parser.add_argument("--embedder", default="openai:all-MiniLM-L6-v2", help="whose vectors in --vectors")
    parser.add_argument("--questions-url", help="the corpus's real questions, embedded by this server, as queries")
    parser.add_argument("--only", nargs="+", help="these arms only")
    args = parser.parse_args()
    real = _stored(args.vectors, args.embedder) if args.vectors else None
    questions = _questions(args.questions_url) if args.questions_url else None
    if args.only:
        for name in set(ARMS) - set(args.only):
            del ARMS[name]
    print("| index | rows | build s | p50 ms | p99 ms | recall@32 | best@1 in 32 | MB per 10k rows |\n"
          "|---|---|---|---|---|---|---|---|")
    for rows in args.rows:
        for r in measure(rows, args.queries, real, questions):
            print(f"| {r['arm']} | {r['rows']:,} | {r['build_s']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                  f"{r['recall']:.3f} | {r['best']:.2f} | {r['bytes_per_10k'] / 1e6:.1f} |")


if __name__ == "__main__":
    main()
