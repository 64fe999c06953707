"""The handoff record files of a test project, read as plain JSON (what is on disk, not the store's view of it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def handoff_files(project: Path) -> list[Path]:
    """``.baton/handoffs/*.json``, in file-name (= creation time, to the second) order."""
    return sorted((project / ".baton" / "handoffs").glob("*.json"))


def handoff_records(project: Path) -> list[dict[str, Any]]:
    """The records in creation order: by file name, and a record always after its parents (two handoffs written in
    the same second have ids in no particular order)."""
    pending = [json.loads(path.read_text(encoding="utf-8")) for path in handoff_files(project)]
    ids = {record.get("id") for record in pending}
    ordered: list[dict[str, Any]] = []
    while pending:
        placed = {record.get("id") for record in ordered}
        ready = next((record for record in pending
                      if all(p in placed or p not in ids for p in (record.get("lineage") or {}).get("parents") or [])),
                     pending[0])  # a cycle (a hand-made record): file-name order
        ordered.append(ready)
        pending.remove(ready)
    return ordered
