"""End-to-end fixtures: a fresh git project and the INSTALLED `baton` console script run as a real process."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from batontest import schemas
from batontest.baton_cli import CliResult, run_baton
from batontest.gitrepo import commit_file, init_repo
from batontest.records import handoff_files


@pytest.fixture
def baton() -> Callable[..., CliResult]:
    """Run the installed console script in ``cwd`` (no tokenizer env: the project config decides)."""
    return run_baton


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = init_repo(tmp_path / "shop")
    commit_file(root, "src/cart.py", "def total(items):\n    return sum(items)\n", "initial")
    commit_file(root, "README.md", "# shop\n", "readme")
    yield root


@pytest.fixture
def commit() -> Callable[[Path, str, str], str]:
    """Commit ``text`` to ``name`` in a repository; returns the new head."""
    return commit_file


@pytest.fixture
def assert_store_conforms() -> Callable[[Path], int]:
    """Every record file under ``.baton/handoffs`` validates against the published schema; returns the count."""

    def check(root: Path) -> int:
        files = handoff_files(root)
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            errors = schemas.conformance_errors(data)
            assert not errors, (path.name, errors)
        return len(files)

    return check
