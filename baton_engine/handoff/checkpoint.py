"""``checkpoint_create``: a new redacted draft from a capture payload, saved in the project.

Why at the handoff level: the ``baton handoff checkpoint`` command (CLI, MCP) and a working session's
draft (``compaction/session.py``, ``baton_capture`` in Hermes) create a checkpoint the same way, and the
compaction core must not depend on the command layer above it. Result: ``{"ok", "handoff", "path",
"redactions"}`` (``handoff``: ``summary.summary_of``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from baton_engine.handoff import capture
from baton_engine.handoff.project import open_project, relative_path
from baton_engine.handoff.summary import redactions_of, summary_of


def checkpoint_create(
    start: Path | str | None,
    payload: dict[str, Any],
    *,
    origin: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A new redacted draft from a capture payload (see ``capture`` for the payload shape)."""
    paths, handoffs, _config = open_project(start)
    record, found = capture.build_draft(payload, paths.root, origin=origin, now=now)
    written = handoffs.save(record)
    return {
        "ok": True,
        "handoff": summary_of(record),
        "path": relative_path(paths, written),
        "redactions": redactions_of(found),
    }
