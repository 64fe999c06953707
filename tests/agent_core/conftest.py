"""What every test of one agent's core shares: a runtime that needs no tokenizer, and an initialised project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from batontest.hermes_home import initialised_project

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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with ``baton init`` done through the operations layer (as the CLI does)."""
    return initialised_project(tmp_path / "project")
