"""Recall tests run offline; ``source`` is one lineage's recall source over a coding session."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
from batontest.transcripts import coding_session  # noqa: E402

from baton_engine.recall import MemoryIndex, RecallSource  # noqa: E402


@pytest.fixture()
def source() -> RecallSource:
    """The in-process index's source over one lineage holding ``transcripts.coding_session()``."""
    index = MemoryIndex()
    index.add("lineage", coding_session())
    return index.source("lineage")
