"""Local-backend tests run offline: never let transformers or the hub reach for the network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402  (after the offline switches)
from baton_hf.backend import HfBackend  # noqa: E402
from batontest import assets  # noqa: E402


@pytest.fixture(scope="module")
def qwen() -> HfBackend:
    return assets.hf_backend(assets.qwen3_dir())


@pytest.fixture(scope="module")
def nemo() -> HfBackend:
    return assets.hf_backend(assets.mistral_nemo_dir())
