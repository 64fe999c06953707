"""Fixtures for the CLI / operations tests: a real git project on disk and the published reference schema."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SCHEMA = REPO.parent / "shared" / "reference" / "handoff-v0.1.reference.json"
GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env)
    return done.stdout.strip()


def commit_file(root: Path, name: str, text: str, message: str = "change") -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    """A fresh git repository with one committed source file (not yet a Baton project)."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit_file(root, "src/app.py", "print('hello')\n", "initial")
    return root


@pytest.fixture(scope="session")
def reference_validator() -> jsonschema.Draft7Validator:
    schema = json.loads(REFERENCE_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


@pytest.fixture(scope="session")
def assert_conforms(reference_validator: jsonschema.Draft7Validator) -> Callable[[dict[str, Any]], None]:
    def check(data: dict[str, Any]) -> None:
        errors = sorted(reference_validator.iter_errors(data), key=lambda err: list(err.path))
        assert not errors, [f"{list(err.path)}: {err.message}" for err in errors]

    return check


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


@dataclass
class Invocation:
    code: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.stdout)


@pytest.fixture
def baton(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Invocation]:
    """Invoke the real click command in-process (CliRunner); ``cwd`` is where `baton` is run from."""
    from click.testing import CliRunner

    from baton_engine.cli import cli

    monkeypatch.delenv("BATON_TOKENIZER_BACKEND", raising=False)

    def invoke(*args: str, cwd: Path, stdin: str | None = None) -> Invocation:
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
        return Invocation(result.exit_code, result.stdout, result.stderr)

    return invoke
