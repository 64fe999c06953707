"""One benchmark process set apart from the machine it runs on: tokenizers offline, no Baton, incontext or Hermes
vLLM setting from the environment (the benchmark sets every setting itself), and a HERMES_HOME of its own.

Why a function the conductors call first: Hermes reads HERMES_HOME when its modules load, so it must be set before
any of them is imported."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

KEPT = ("BATON_BENCH_COMMIT", "BATON_TOKENIZER_CACHE")  # not settings: where the run comes from and caches


def isolate() -> Path:
    """Set the environment as above; the new HERMES_HOME."""
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    for name in [n for n in os.environ if n.startswith(("BATON_", "INCONTEXT_", "HERMES_VLLM_")) and n not in KEPT]:
        del os.environ[name]
    hermes_home = Path(tempfile.mkdtemp(prefix="baton-bench-hermes-"))
    os.environ["HERMES_HOME"] = str(hermes_home)
    return hermes_home
