"""Where each paraphrased question's answer ranks (issue 46 item 3: the ceiling, with evidence).

The corpus's whole session is the compacted lineage (as ``paraphrase_bench.py --retrieval``); for each fact, the
rank of its answer line among every line row of the lineage by cosine with the question (the embedder's view), and
the rank of the best passage holding the answer by BM25 (FTS5's view; "-" when no term of the question matches
it). A question whose answer line ranks low by both cannot be reached by fusing the two: that is the model's
ceiling, not the ranking's.

Run: ``python benchmarks/recall/paraphrase_ranks.py --embedder-url URL [--embedder-model NAME] [--vectors DIR]
[--query-prefix P --passage-prefix P]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from benchmarks.harness import paraphrase_corpus as corpus  # noqa: E402

from baton_engine.embedding import EmbedderConfig, embed_questions  # noqa: E402
from baton_engine.embedding.plugins import load_embedder  # noqa: E402
from baton_engine.recall import MemoryIndex, dense, parse_query  # noqa: E402
from baton_engine.recall.index import lineage_index  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "the paraphrase ceiling with all-MiniLM-L6-v2 over 19,115 line rows",
    "target": "how far ranking by meaning can reach on the corpus",
    "findings": 20,
    "test": None,
}


def ranks(embedder_url: str, model: str, vectors: Path | None, prefixes: tuple[str, str] = ("", "")) \
        -> list[dict[str, object]]:
    if vectors is not None:
        dense.keep_vectors_in(vectors)
    embedder = load_embedder(EmbedderConfig("openai", embedder_url, model, query_prefix=prefixes[0],
                                            passage_prefix=prefixes[1]))
    index = MemoryIndex(max_bytes=1 << 30)
    index.add("lineage", corpus.build_session().messages)
    lineage = lineage_index(index.source("lineage").entries())
    dense.embed_passages(lineage.passages, embedder)
    rows, texts = [], []  # every line unit of the lineage: (passage number, text)
    for number, passage in enumerate(lineage.passages):
        for unit in dense.units(passage):
            rows.append(number)
            texts.append(unit.text)
    matrix = np.vstack([dense.cached_vector(embedder.name, text) for text in texts])
    found = []
    for fact in corpus.FACTS:
        (question,) = embed_questions(embedder, [fact.question])
        vector = np.asarray(question, dtype=np.float32)
        cosines = matrix @ (vector / np.linalg.norm(vector))
        holding = [i for i, text in enumerate(texts) if fact.answer in text]
        best = max(holding, key=lambda i: cosines[i]) if holding else None
        cosine_rank = int((cosines > cosines[best]).sum()) + 1 if best is not None else None
        lexical = lineage.lexical.search(parse_query(fact.question), len(lineage.passages))
        lexical_rank = next((r for r, (n, _s) in enumerate(lexical, 1) if fact.answer in lineage.passages[n].text),
                            None)
        found.append({"question": fact.question, "answer": fact.answer, "where": fact.where,
                      "cosine": float(cosines[best]) if best is not None else None, "cosine_rank": cosine_rank,
                      "best_cosine": float(cosines.max()), "lexical_rank": lexical_rank, "rows": len(texts)})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder-url", required=True)
    parser.add_argument("--embedder-model", default="all-MiniLM-L6-v2")
    parser.add_argument("--vectors", type=Path)
    parser.add_argument("--query-prefix", default="")
    parser.add_argument("--passage-prefix", default="")
    args = parser.parse_args()
    found = ranks(args.embedder_url, args.embedder_model, args.vectors, (args.query_prefix, args.passage_prefix))
    print(f"{found[0]['rows']} line rows\n\n| question | answer | where | answer line's cosine (best line's) | rank by "
          "cosine | rank by BM25 |\n|---|---|---|---|---|---|")
    for row in found:
        print(f"| {row['question']} | `{row['answer']}` | {row['where']} | "
              f"{row['cosine']:.3f} ({row['best_cosine']:.3f})"
              f" | {row['cosine_rank']} | {row['lexical_rank'] or '-'} |")


if __name__ == "__main__":
    main()
