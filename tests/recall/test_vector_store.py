"""Passage vectors kept on disk beside the records (issue 32 item 2): a restarted process takes them from the store
instead of asking the embedder again, and the store holds vectors, never the text they came from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batontest.embedding_standin import EmbeddingStandin

from baton_engine.recall.vector_store import FILE_NAME, VectorStore

pytest.importorskip("numpy")

FACT = "Staging pgbouncer settled: DB_PORT=6543."
# One process's life: a lineage compacted, its vectors computed in the background, a paraphrased question asked.
PROCESS = """
import json, sys
from pathlib import Path
from baton_engine.embedding import EmbedderConfig, load_embedder
from baton_engine.recall import MemoryIndex, dense, recall_tool
from baton_engine.recall.vector_store import VectorStore
url, store, fact = sys.argv[1:4]
dense.use_store(VectorStore(Path(store)))
index = MemoryIndex()
index.add("k", [{"role": "user", "content": fact},
                *({"role": "user", "content": f"Review note {n}: rename the helper in module {n}."} for n in range(30))])
embedder = load_embedder(EmbedderConfig("openai", url, "toy", timeout_seconds=5))
question = {"mode": "search", "query": "which socket does the pre-production pooler listen on?"}
recall_tool(index.source("k"), question, len, embedder)
dense.wait_idle()
print(json.dumps(recall_tool(index.source("k"), question, len, embedder)["hits"][0]["snippet"]))
"""


def _process(url: str, store: Path) -> str:
    done = subprocess.run([sys.executable, "-c", PROCESS, url, str(store), FACT], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def test_a_restarted_process_takes_the_vectors_from_the_store_not_the_embedder(tmp_path: Path) -> None:
    store = tmp_path / ".baton" / "vectors"
    with EmbeddingStandin() as server:
        first = _process(server.url, store)
        embedded_first = sum(server.requests)
        server.requests.clear()
        second = _process(server.url, store)
        embedded_second = sum(server.requests)
    assert "6543" in first and second == first
    # every passage once, and the question of the search that had vectors to rank (the first one had none yet)
    assert embedded_first == 31 + 1
    assert embedded_second == 1  # only the question: the passages' vectors came from the store
    assert VectorStore(store).count("openai:toy") == 31


def test_the_store_holds_vectors_and_keyed_digests_never_text(tmp_path: Path) -> None:
    store = VectorStore(tmp_path)
    store.put("e", [(store.digest(FACT), b"\x00\x00\x80?" * 4)])
    raw = (tmp_path / FILE_NAME).read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob(f"{FILE_NAME}-*"))
    assert b"6543" not in raw and b"pgbouncer" not in raw
    assert store.get("e", [store.digest(FACT)]) == {store.digest(FACT): b"\x00\x00\x80?" * 4}
    assert VectorStore(tmp_path / "other").digest(FACT) != store.digest(FACT)  # keyed per store
    assert store.get("another-embedder", [store.digest(FACT)]) == {}


def test_the_runtime_keeps_vectors_beside_the_projects_records(tmp_path: Path) -> None:
    from baton_engine.agent.runtime import BatonRuntime
    from baton_engine.embedding import EmbedderConfig
    from baton_engine.recall import dense
    from baton_engine.settings import BatonSettings

    (tmp_path / ".baton").mkdir()
    try:
        with EmbeddingStandin() as server:
            runtime = BatonRuntime(BatonSettings(embedder=EmbedderConfig("openai", server.url, "toy")),
                                   project_root=tmp_path)
            assert runtime.embedder() is not None
        assert (tmp_path / ".baton" / "cache" / "vectors" / FILE_NAME).is_file()
    finally:
        dense.use_store(None)  # this process's other tests keep vectors in memory only


def test_a_new_store_keeps_a_vector_in_about_its_own_size(tmp_path: Path) -> None:
    """16 KB pages: a 1,536-byte row stays on its page (4 KB pages put it on overflow pages: 4,699 bytes a row)."""
    import os
    import sqlite3

    store = VectorStore(tmp_path)
    store.put("e", [(os.urandom(16), os.urandom(1536)) for _ in range(1000)])
    store.close()
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages, page = db.execute("PRAGMA page_count").fetchone()[0], db.execute("PRAGMA page_size").fetchone()[0]
    assert page == 16384 and pages * page / 1000 < 2500
