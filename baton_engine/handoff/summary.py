"""How a result describes records: the short, stable summary of a handoff, its redactions, unreadable files.

Why at the handoff level: every command's result and the compaction core's (``compaction/cycle.py``,
``compaction/session.py``) name handoffs with the same keys: ``{"id", "short_id", "status", "title",
"created_at", "updated_at", "relation", "parents", "owner"}`` (``owner``: ``{"platform",
"conversation_id"}`` or null).
"""

from __future__ import annotations

from typing import Any

from baton_engine.handoff import store
from baton_engine.handoff.model import HandoffRecord, Redaction
from baton_engine.handoff.owner import Scope
from baton_engine.handoff.project import relative_path


def summary_of(record: HandoffRecord) -> dict[str, Any]:
    """The short, stable description of a record used in every result."""
    return {
        "id": record.id,
        "short_id": record.short_id,
        "status": record.status,
        "title": record.work.title,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "relation": record.lineage.relation,
        "parents": list(record.lineage.parents),
        "owner": record.origin.owner.model_dump(mode="json") if record.origin.owner is not None else None,
    }


def redactions_of(items: list[Redaction]) -> list[dict[str, Any]]:
    """What was redacted (field, reason, replacement): never the redacted value."""
    return [{"field": r.field, "reason": r.reason, "replacement": r.replacement} for r in items]


def problems_of(paths: store.ProjectPaths, listing: store.ListResult,
                scope: Scope | None = None) -> list[dict[str, Any]]:
    """Unreadable files (their owner is unknown, so only a project-wide scope is shown them)."""
    if scope is not None and not scope.project_wide:
        return []
    return [{"path": relative_path(paths, problem.path), "kind": problem.kind, "problem": problem.reason}
            for problem in listing.problems]
