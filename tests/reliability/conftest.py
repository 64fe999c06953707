"""Fixtures for the reliability suite: real git projects (initialised or not) and DEBUG log capture.

Engine-level tests (marker ``hermes``) build a real ``BatonContextEngine`` (Hermes' ABC); the rest
drive the CLI and the store directly and run in the default environment.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from batontest.hermes_home import git_project, initialised_project
from reliability.kit import LogSink, capture_all_logs

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="baton-reliability-home-"))  # before any Hermes import
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one commit and an initialised ``.baton/`` (what ``baton init`` makes)."""
    return initialised_project(tmp_path / "proj")


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """A git repository where ``baton init`` was never run."""
    return git_project(tmp_path / "bare", {"README.md": "# demo\n"})


@pytest.fixture
def debug_logs() -> Iterator[LogSink]:
    """Every log line of this test, at DEBUG, from every logger."""
    with capture_all_logs() as sink:
        yield sink
