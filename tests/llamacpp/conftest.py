"""Fixtures for the llamacpp backend: the loopback stand-in (default environment) and a REAL llama-server
(marker llama_real, tox env llama-real)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from baton_engine.tokens.contract import TokenizerConfig
from baton_hf.backend import HfBackend
from batontest.assets import qwen3_dir
from batontest.llama_standin import LlamaStandin


@pytest.fixture(scope="session")
def hf() -> HfBackend:
    return HfBackend.from_config(TokenizerConfig(backend="hf", path=str(qwen3_dir())))


@pytest.fixture(scope="session")
def standin() -> Iterator[LlamaStandin]:
    with LlamaStandin(qwen3_dir()) as server:
        yield server
