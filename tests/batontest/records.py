"""The handoff record files of a test project, read as plain JSON (what is on disk, not the store's view of it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def handoff_files(project: Path) -> list[Path]:
    """``.baton/handoffs/*.json``, in file-name (= creation time) order."""
    return sorted((project / ".baton" / "handoffs").glob("*.json"))


def handoff_records(project: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in handoff_files(project)]
