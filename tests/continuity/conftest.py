"""Continuity tests (recall, anchors, user words) run offline with the real Qwen3 tokenizer."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Callable  # noqa: E402

import pytest  # noqa: E402
from batontest import assets  # noqa: E402

from continuity.transcripts import coding_session  # noqa: E402

from baton_engine.recall import MemoryIndex, RecallSource  # noqa: E402


@pytest.fixture(scope="session")
def qwen_count() -> Callable[[str], int]:
    """Exact Qwen3 token count of plain text (the hf backend, as the engine would inject it)."""
    backend = assets.hf_backend(assets.qwen3_dir())
    return lambda text: backend.count_text(text).tokens


@pytest.fixture()
def source() -> RecallSource:
    """The in-process index's source over one lineage holding ``transcripts.coding_session()``."""
    index = MemoryIndex()
    index.add("lineage", coding_session())
    return index.source("lineage")
