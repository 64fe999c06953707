"""Fixtures for the CLI / operations tests: a real git project on disk and the published reference schema."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
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
