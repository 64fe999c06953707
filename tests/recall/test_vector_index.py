"""Nearest rows (issue 46 item 2): exact numpy below the measured size, an HNSW graph (usearch) above it built in
the background, rows newer than the graph ranked exactly beside it; a lineage's status counts rows embedded and
pending."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from baton_engine.recall import MemoryIndex, dense, recall_tool, vector_index
from baton_engine.recall import index as recall_index
from baton_engine.recall.vector_index import RowIndex

needs_usearch = pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed")


def _rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_below_the_bound_rows_are_ranked_exactly_and_grow_in_one_matrix() -> None:
    index = RowIndex(np)
    rows = _rows(3000, 1)
    for start in range(0, 3000, 700):  # grown in steps: the matrix doubles, the rows stay in order
        index.add(rows[start:start + 700])
    found, cosines = index.nearest(rows[1234], 5)
    exact = np.argsort(-(rows @ rows[1234]))[:5]
    assert found.tolist() == exact.tolist() and cosines[0] == pytest.approx(1.0, abs=1e-5)
    assert len(index) == 3000 and index.graphed == 0 and index.nbytes == 3000 * 16 * 4


@needs_usearch
def test_above_the_bound_a_graph_answers_and_newer_rows_are_never_missed(monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_MAX_ROWS", 500)
    index = RowIndex(np)
    rows = _rows(2000, 2)
    index.add(rows)
    vector_index.wait_idle()
    assert index.graphed == 2000 and index.nbytes > 2000 * 16 * 4  # the graph's memory on top of the rows
    hits = sum(index.nearest(row, 1)[0][0] == n for n, row in enumerate(rows[:200]))
    assert hits >= 195  # a row's own vector comes back first (HNSW: approximate, here nearly always)
    newer = _rows(10, 3)
    monkeypatch.setattr(vector_index, "graph_available", lambda: False)  # no build: these stay in the exact tail
    index.add(newer)
    assert index.graphed == 2000
    assert index.nearest(newer[7], 1)[0][0] == 2007


@needs_usearch
def test_above_the_bound_a_question_far_from_every_row_still_finds_the_best_row(monkeypatch) -> None:
    """A question sits far from every line (cosines 0.1-0.2 here, 0.3-0.6 for real questions), where a graph built
    and searched with usearch's defaults loses the best row (3 of these 60; with real questions and lines it lost
    it for 37%, and recall answered 9 of 36 against 18 ranked exactly: FINDINGS 22); searched as shipped, the
    candidates' cosines taken from the float32 rows, the best row comes back first with its exact cosine."""
    monkeypatch.setattr(vector_index, "EXACT_MAX_ROWS", 500)
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((4000, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    questions = rng.standard_normal((60, 384)).astype(np.float32)
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    index = RowIndex(np)
    index.add(rows)
    vector_index.wait_idle()
    assert index.graphed == 4000
    for question in questions:
        found, cosines = index.nearest(question, 32)
        assert found[0] == int(np.argmax(rows @ question))
        assert cosines.tolist() == pytest.approx((rows[found] @ question).tolist(), abs=1e-6)


def test_status_counts_rows_embedded_and_pending_per_lineage(qwen_count) -> None:
    class Lines:
        name = "test:status-rows"

        def embed(self, texts):
            return [[1.0, float(len(text))] for text in texts]

    index = MemoryIndex()
    index.add("k", [{"role": "user", "content": "status rows: first line\nsecond line here"},
                    {"role": "user", "content": "another message with one line"}])
    source = index.source("k")
    assert recall_index.status(source.entries(), Lines())["passages"] == 0  # nothing indexed yet
    recall_tool(source, {"mode": "search", "query": "line"}, qwen_count, Lines())
    dense.wait_idle()
    status = recall_index.status(source.entries(), Lines())
    assert status == {"messages": 2, "messages_indexed": 2, "passages": 2, "rows_embedded": 3, "rows_pending": 0,
                      "rows_ranked": 3, "vector_bytes": 3 * 2 * 4}
    index.add("k", [{"role": "user", "content": "a third message arrives\nwith two lines"}])
    assert recall_index.status(source.entries(), Lines())["messages_indexed"] == 2  # the next search indexes it
