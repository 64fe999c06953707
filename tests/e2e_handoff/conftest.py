"""End-to-end fixtures: a fresh git project and the INSTALLED `baton` console script run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SCHEMA = REPO.parent / "shared" / "reference" / "handoff-v0.1.reference.json"
BATON = Path(sys.executable).parent / "baton"
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


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.stdout)


@pytest.fixture
def baton() -> Callable[..., Run]:
    """Run the installed console script in ``cwd`` (no tokenizer env: the project config decides)."""
    assert BATON.exists(), f"console script not installed at {BATON}; pip install -e ."
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BATON_", "INCONTEXT_"))}

    def run(*args: str, cwd: Path, stdin: str | None = None) -> Run:
        done = subprocess.run([str(BATON), *args], cwd=cwd, capture_output=True, text=True, input=stdin,
                              env=env, timeout=120)
        return Run(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit_file(root, "src/cart.py", "def total(items):\n    return sum(items)\n", "initial")
    commit_file(root, "README.md", "# shop\n", "readme")
    yield root


@pytest.fixture
def commit() -> Callable[[Path, str, str], str]:
    """Commit ``text`` to ``name`` in a repository; returns the new head."""
    return commit_file


@pytest.fixture(scope="session")
def reference_validator() -> jsonschema.Draft7Validator:
    schema = json.loads(REFERENCE_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


@pytest.fixture
def assert_store_conforms(reference_validator: jsonschema.Draft7Validator) -> Callable[[Path], int]:
    """Every record file under ``.baton/handoffs`` validates against the published schema; returns the count."""

    def check(root: Path) -> int:
        files = sorted((root / ".baton" / "handoffs").glob("*.json"))
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            errors = [f"{list(e.path)}: {e.message}" for e in reference_validator.iter_errors(data)]
            assert not errors, (path.name, errors)
        return len(files)

    return check
