"""Search latency on 1,000 stored records (issue 32: p99 <= 50 ms, the embedder's own time apart).

1,000 compacted messages of the paraphrase corpus's kind (user turns, tool calls, tool results of 60-160 lines)
in one lineage of the in-process index; each of the corpus's questions asked through ``recall_tool`` (ranking,
hits, their redaction and the exact token count of the packed answer with the Qwen3 tokenizer, as the engine
does), lexically and hybrid. The hybrid arm's vectors are computed before timing (as the background worker
does); its embedder hands back a stored 384-dimension vector per text (all-MiniLM-L6-v2's size: the cost of
ranking depends on the count and size of the vectors, not their values), and the time of its ``embed`` call,
the question's own embedding, is taken out of each search's time. The records' messages are redacted and counted
in the background before timing, as the engine's compaction does for the region it takes out
(``redacted.count_ahead``; ``--no-count-ahead``: not, then a hit's message is counted the first time it is a hit).
"first ask": every question once; "asked again": the same questions again.

Run: ``python benchmarks/recall/recall_latency_bench.py [--records 1000] [--rounds 5]`` (numpy needed).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from benchmarks.harness import paraphrase_corpus as corpus  # noqa: E402
from batontest.assets import qwen3_dir  # noqa: E402
from benchmarks.harness.percentiles import percentile  # noqa: E402

from baton_engine.recall import MemoryIndex, dense, recall_tool, redacted  # noqa: E402
from baton_engine.recall import vector_index  # noqa: E402
from baton_engine.recall.index import lineage_index  # noqa: E402
from baton_engine.tokens.plugins import build_backend  # noqa: E402
from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "1,000 records: lexical first ask p50 / p99 5.9 / 23.8 ms, hybrid 10.8 / 20.1 ms",
    "target": "p99 under 50 ms",
    "findings": 21,
    "test": None,
}

DIMENSIONS = 384


class StoredVectors:
    """An embedder whose vectors are already computed (a seeded vector per text); counts its own seconds."""

    name = "stored:384"

    def __init__(self) -> None:
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        rows = [np.random.default_rng(int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "big"))
                .standard_normal(DIMENSIONS).astype(np.float32).tolist() for t in texts]
        self.seconds += time.perf_counter() - started
        return rows


def records(count: int) -> list[dict]:
    """Messages of the corpus's session kind holding ``count`` distinct records (identical short replies are one
    record: refs are content-addressed)."""
    messages, seen = [], set()
    for message in corpus.build_session(filler_turns=count // 2).messages:
        key = repr(message.get("content")) + repr(message.get("tool_calls"))
        messages.append(dict(message))
        seen.add(key)
        if len(seen) >= count:
            break
    return messages


def measure(count: int, rounds: int, count_ahead: bool = True) -> list[dict[str, float | str | int]]:
    backend, _selection = build_backend(TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B"))

    def count_text(text: str) -> int:
        return backend.count_text(text).tokens or 0

    index = MemoryIndex(max_bytes=1 << 30)
    index.add("bench", records(count))
    source = index.source("bench")
    if count_ahead:  # as the engine's compaction does for the region it takes out (agent/recall_binding.py)
        redacted.count_ahead(source.entries(), count_text)
    embedder = StoredVectors()
    rows = []
    for arm, arm_embedder in (("lexical", None), ("hybrid", embedder)):
        recall_tool(source, {"mode": "search", "query": "warm up"}, count_text, arm_embedder)
        dense.wait_idle()  # the vectors and their graph, computed off the request path before timing
        redacted.wait_idle()  # each message redacted when the index grew (off the request path)
        vectors = lineage_index(source.entries(), arm_embedder).vectors(arm_embedder) if arm_embedder else None
        for label, repeat in (("first ask", 1), ("asked again", rounds)):  # a hit's message counted once, then kept
            times = []
            for _ in range(repeat):
                for question in (*(f.question for f in corpus.FACTS), *corpus.ABSENT):
                    embedder.seconds = 0.0
                    started = time.perf_counter()
                    recall_tool(source, {"mode": "search", "query": question}, count_text, arm_embedder)
                    times.append(time.perf_counter() - started - embedder.seconds)
            rows.append({"arm": arm, "calls": label, "records": len(source.entries()),
                         "passages": len(lineage_index(source.entries()).passages), "searches": len(times),
                         "p50_ms": 1000 * percentile(times, 0.5), "p99_ms": 1000 * percentile(times, 0.99),
                         "vector_rows": vectors.rows if vectors else 0,
                         "vector_bytes": vectors.nbytes if vectors else 0})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-count-ahead", action="store_true",
                        help="no counting at compaction: each hit's message counted the first time it is a hit")
    args = parser.parse_args()
    with open("/proc/loadavg", encoding="ascii") as load:
        before = load.read().split()[:3]
    found = measure(args.records, args.rounds, not args.no_count_ahead)
    with open("/proc/loadavg", encoding="ascii") as load:
        after = load.read().split()[:3]
    print("| ranking | questions | records (passages) | searches | p50 ms | p99 ms | vector rows | MB per 10k rows |\n"
          "|---|---|---|---|---|---|---|---|")
    for row in found:
        per = f"{row['vector_bytes'] * 10_000 / row['vector_rows'] / 1e6:.1f}" if row["vector_rows"] else ""
        print(f"| {row['arm']} | {row['calls']} | {row['records']} ({row['passages']}) | {row['searches']} | "
              f"{row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['vector_rows']:,} | {per} |")
    print(f"\nload average (1, 5, 15 min) before: {' '.join(before)}; after: {' '.join(after)}; graph: "
          f"{'usearch' if vector_index.graph_available() else 'none (exact numpy)'} above "
          f"{vector_index.EXACT_MAX_ROWS:,} rows")


if __name__ == "__main__":
    main()
