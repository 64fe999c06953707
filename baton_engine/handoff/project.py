"""The project a command works in: found at or above a directory, with its store and config.

Why at the handoff level: every command of the operations layer and a session's draft
(``compaction/session.py``, through ``handoff/checkpoint.py``) open the project the same way. ``start`` is
a directory inside the project (the root is found by walking up to ``.baton/``, falling back to
``.threadline/``); no project -> ``NotFoundError`` (exit 4) advising ``baton init``.
"""

from __future__ import annotations

from pathlib import Path

from baton_engine.errors import NotFoundError
from baton_engine.handoff import store
from baton_engine.handoff.config import BatonConfig, load_config


def require_project(start: Path | str | None) -> store.ProjectPaths:
    """The project at or above ``start`` (default: the working directory); ``NotFoundError`` without one."""
    where = Path(start or ".").resolve()
    paths = store.find_project_root(where)
    if paths is None:
        raise NotFoundError(f"no Baton project at or above {where}; run `baton init` in the project root first")
    return paths


def open_project(start: Path | str | None) -> tuple[store.ProjectPaths, store.HandoffStore, BatonConfig]:
    """The project, its handoff store and its ``.baton/config.json`` (a broken config raises here)."""
    paths = require_project(start)
    return paths, store.HandoffStore(paths), load_config(paths.data_dir)


def relative_path(paths: store.ProjectPaths, path: Path) -> str:
    """``path`` relative to the project root when it is inside it, else as given (how results name files)."""
    try:
        return str(Path(path).resolve().relative_to(paths.root.resolve()))
    except ValueError:
        return str(path)
