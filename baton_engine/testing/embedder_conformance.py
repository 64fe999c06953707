"""The conformance check for embedder-backend authors: ``check_embedder(embedder) -> Report``.

What recall relies on: one vector per text, in order, all of one dimension, finite; the same text gives the same
vector alone and inside a batch (vectors are computed once and kept, the query alone); an empty batch is empty;
and, for a model worth ranking by, a paraphrase is nearer its statement than an unrelated sentence is. The
report is the tokenizer kit's (``Report``); details carry counts and check names, never the texts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from baton_engine.embedding import Embedder, checked_vectors
from baton_engine.testing.report import FAIL, PASS, Check, Report

TEXTS = ("The staging database listens on port 6543 behind pgbouncer.",
         "Please never restart the ingest workers during business hours.",
         "AUC on validation: 0.847 (baseline logistic regression: 0.781)",
         "def settle(ledger):\n    return ledger.balance()",
         "日本語のテキストも埋め込めること。")
# (question, its statement, an unrelated sentence): a model should put the first two nearer
PARAPHRASES = (("Which port does the pre-production pooler listen on?", TEXTS[0],
                "The cat slept on the warm windowsill all afternoon."),
               ("When are we forbidden to bounce the data loading processes?", TEXTS[1],
                "Bake the bread at two hundred degrees for forty minutes."),
               ("How well did the new classifier score on held-out data?", TEXTS[2],
                "The river flooded the lower meadow in spring."))
TOLERANCE = 1e-3


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / max(math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)), 1e-12)


def _check(name: str, ok: bool, detail: str, fix: str) -> Check:
    return Check(name, PASS if ok else FAIL, detail, "" if ok else fix)


def check_embedder(embedder: Embedder, semantic: bool = True) -> Report:
    """Run the checks; ``semantic=False`` skips the paraphrase check (a test double that is not a real model)."""
    checks = []
    try:
        batch = checked_vectors(embedder.embed(list(TEXTS)), len(TEXTS))
        checks.append(Check("shape", PASS, f"{len(batch)} vectors of {len(batch[0])} dimensions"))
    except Exception as exc:  # noqa: BLE001  the kit reports any failure of the backend under test
        checks.append(Check("shape", FAIL, f"{type(exc).__name__}", "return one list of floats per text, in order, "
                                                                   "all of one dimension"))
        return Report(embedder.name, None, tuple(checks))
    alone = [checked_vectors(embedder.embed([text]), 1)[0] for text in TEXTS]
    worst = min(_cosine(a, b) for a, b in zip(alone, batch, strict=True))
    checks.append(_check("batch_independent", worst >= 1 - TOLERANCE, f"lowest cosine alone vs in batch {worst:.4f}",
                         "a text's vector must not depend on the other texts of its batch (padding, pooling)"))
    again = checked_vectors(embedder.embed(list(TEXTS)), len(TEXTS))
    same = min(_cosine(a, b) for a, b in zip(again, batch, strict=True))
    checks.append(_check("deterministic", same >= 1 - TOLERANCE, f"lowest cosine of a repeat {same:.4f}",
                         "the same text must give the same vector"))
    empty = embedder.embed([])
    checks.append(_check("empty_batch", empty == [], f"{len(empty)} vectors for no text", "return [] for []"))
    if semantic:
        nearer = sum(_cosine(*embedder.embed([q, s])) > _cosine(*embedder.embed([q, u])) for q, s, u in PARAPHRASES)
        checks.append(_check("paraphrase_nearer", nearer == len(PARAPHRASES),
                             f"{nearer} of {len(PARAPHRASES)} questions nearer their statement than unrelated text",
                             "the model does not place paraphrases near each other: use a sentence-embedding model"))
    return Report(embedder.name, None, tuple(checks))
