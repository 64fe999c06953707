"""Fixtures for the CLI / operations tests: a real git project on disk and the published reference schema."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from batontest import schemas
from batontest.baton_cli import CliResult
from batontest.gitrepo import commit_file, init_repo


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    """A fresh git repository with one committed source file (not yet a Baton project)."""
    root = init_repo(tmp_path / "proj")
    commit_file(root, "src/app.py", "print('hello')\n", "initial")
    return root


@pytest.fixture(scope="session")
def assert_conforms() -> Callable[[dict[str, Any]], None]:
    return schemas.assert_conforms


SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE_SNAPSHOTS = os.environ.get("BATON_UPDATE_SNAPSHOTS") == "1"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_VOLATILE = [
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"), "<TIME>"),
    (re.compile(r"\d{8}T\d{6}Z"), "<FILESTAMP>"),
    (re.compile(r"--[0-9a-f]{8}\.json"), "--<SHORT>.json"),
    (re.compile(r"sha256:[0-9a-f]{64}"), "sha256:<HASH>"),
    (re.compile(r"sha256:[0-9a-f]{16}\b"), "sha256:<SESSION>"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "<SHA>"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "<SHORTSHA>"),
]


def normalize(text: str, root: Path) -> str:
    """Replace what differs between runs (ids, times, hashes, the temp root) with stable placeholders.

    Record ids are numbered in order of first appearance, and their 8-hex short forms follow them, so a
    snapshot still shows WHICH record each reference points at.
    """
    for number, uuid in enumerate(dict.fromkeys(_UUID.findall(text)), start=1):
        text = text.replace(uuid, f"<ID{number}>").replace(uuid.replace("-", "")[-8:], f"<SHORT{number}>")
    text = text.replace(str(root.resolve()), "<ROOT>").replace(str(root), "<ROOT>")
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


@pytest.fixture
def snapshot() -> Callable[[str, str, Path], None]:
    """Compare normalised output with ``snapshots/<name>``; BATON_UPDATE_SNAPSHOTS=1 rewrites the file."""

    def check(name: str, output: str, root: Path) -> None:
        actual = normalize(output, root).rstrip("\n") + "\n"
        path = SNAPSHOTS / name
        if UPDATE_SNAPSHOTS or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            if not UPDATE_SNAPSHOTS:
                pytest.fail(f"snapshot {name} was missing and has been written; review it and re-run")
        assert actual == path.read_text(encoding="utf-8")

    return check


@pytest.fixture
def baton(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Invoke the real click command in-process (CliRunner); ``cwd`` is where `baton` is run from."""
    from click.testing import CliRunner

    from baton_engine.cli import cli

    monkeypatch.delenv("BATON_TOKENIZER_BACKEND", raising=False)

    def invoke(*args: str, cwd: Path, stdin: str | None = None) -> CliResult:
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return invoke
