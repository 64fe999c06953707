"""A benchmark's project: a git repository with the session's files and an initialised Baton store, and its copy
taken before the first repeat so every repeat starts from the same state."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from batontest.hermes_home import git_project

from baton_engine.operations.handoffs import init
from baton_engine.results import call
from benchmarks.harness import workload


def new_project(session: workload.Session) -> Path:
    files = {"README.md": "# ledger\n", **session.files}
    root = git_project(Path(tempfile.mkdtemp(prefix="baton-bench-project-")), files)
    result, _ = call(init, root)
    if not result.get("ok"):
        raise RuntimeError(f"baton init failed: {result.get('error')}")
    return root


def snapshot(project: Path) -> Path:
    """A copy of the project directory (git, files, store) taken before the first repeat."""
    saved = Path(tempfile.mkdtemp(prefix="baton-bench-snapshot-")) / "project"
    shutil.copytree(project, saved, symlinks=True)
    return saved


def restore(project: Path, saved: Path) -> None:
    """Put the project back to ``saved`` at the same path (the project id is the path's hash)."""
    shutil.rmtree(project)
    shutil.copytree(saved, project, symlinks=True)
