"""all-MiniLM-L6-v2 run in-process the way sentence-transformers runs it (BERT, mean pooling over the attention
mask, L2 normalisation), with plain transformers: the reference the vLLM-served vectors are compared with.

Why a script: torch lives in the vLLM server's venv only (never in Baton's environments), so the vllm-real tests
run it with that venv's python: ``python minilm_reference.py MODEL_DIR`` reads a JSON list of texts on stdin and
writes their vectors as JSON on stdout.
"""

from __future__ import annotations

import json
import sys

import torch
from transformers import AutoModel, AutoTokenizer


def main() -> None:
    directory, texts = sys.argv[1], json.load(sys.stdin)
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    model = AutoModel.from_pretrained(directory, local_files_only=True).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    vectors = torch.nn.functional.normalize(pooled, p=2, dim=1)
    json.dump(vectors.tolist(), sys.stdout)


if __name__ == "__main__":
    main()
