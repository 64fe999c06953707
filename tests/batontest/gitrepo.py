"""Real git repositories for tests, with one fixed identity.

Why: many suites commit into throw-away repositories; the identity, disabled signing and the
timeout must not depend on the machine's git config, and one helper keeps them the same everywhere.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}


def git(root: Path, *args: str) -> str:
    """Run ``git -C root ARGS`` (signing off, test identity); returns stdout without surrounding space."""
    done = subprocess.run(["git", "-C", str(root), "-c", "commit.gpgsign=false", *args], check=True,
                          capture_output=True, text=True, env={**os.environ, **GIT_ENV}, timeout=30)
    return done.stdout.strip()


def commit_all(root: Path, message: str) -> str:
    """Stage everything and commit; returns the new head."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def commit_file(root: Path, name: str, text: str, message: str = "change") -> str:
    """Write ``text`` to ``name`` (parents created) and commit only that file; returns the new head."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def init_repo(root: Path, files: Mapping[str, str] | None = None, message: str = "initial") -> Path:
    """Create ``root`` as a git repository on ``main``; with ``files``, commit them as the first commit."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if files:
        commit_all(root, message)
    return root
