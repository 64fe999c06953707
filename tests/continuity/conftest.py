"""Continuity tests (recall, anchors, user words) run offline with the real Qwen3 tokenizer."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Callable  # noqa: E402

import pytest  # noqa: E402
from batontest import assets  # noqa: E402

from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402


@pytest.fixture(scope="session")
def qwen_count() -> Callable[[str], int]:
    """Exact Qwen3 token count of plain text (the hf backend, as the engine would inject it)."""
    from baton_hf.backend import HfBackend

    backend = HfBackend.from_config(TokenizerConfig(backend="hf", path=str(assets.qwen3_dir())))
    return lambda text: backend.count_text(text).tokens
