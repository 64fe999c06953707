"""What every test of one agent's core shares: a runtime that needs no tokenizer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.settings import load_settings


@pytest.fixture(autouse=True)
def rough_runtime() -> Iterator[BatonRuntime]:
    """A runtime counting with the rough estimator (no tokenizer to load), installed for the test."""
    installed = BatonRuntime(load_settings({}, {"tokenizer": {"backend": "rough"}}))
    previous = set_runtime(installed)
    yield installed
    set_runtime(previous)
    installed.close()
