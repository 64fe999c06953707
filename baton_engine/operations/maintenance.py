"""Maintenance commands: ``gc`` (rebuildable files only), ``audit`` (what the project stores), ``migrate``
(legacy ``.threadline/``) and ``report`` (a session's metrics log as data and an HTML page).

Why together: none of them changes a record; each tidies or reads the project around the records.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from baton_engine.errors import NotFoundError, UserInputError
from baton_engine.handoff import store
from baton_engine.handoff.owner import Scope
from baton_engine.handoff.project import open_project, relative_path, require_project
from baton_engine.handoff.summary import problems_of
from baton_engine.metrics import read as read_metrics

REBUILDABLE = ("cache", "index.sqlite")


def gc(start: Path | str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """Delete only rebuildable files (``cache/``, ``index.sqlite``) and the temp files interrupted writes left
    (``store.stale_temp_files``); canonical records are never touched."""
    paths = require_project(start)
    removed = []
    for temp in store.stale_temp_files(paths.data_dir):
        removed.append(relative_path(paths, temp))
        if not dry_run:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
    for name in REBUILDABLE:
        target = paths.data_dir / name
        if not target.exists():
            continue
        removed.append(relative_path(paths, target))
        if dry_run:
            continue
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    return {"ok": True, "removed": removed, "dry_run": dry_run}


def audit(start: Path | str | None = None) -> dict[str, Any]:
    """What the project stores: records by status, every redaction (field + reason) and every external ref."""
    paths, handoffs, _config = open_project(start)
    listing = handoffs.list()
    by_status: dict[str, int] = {}
    redactions, external, sensitive = [], [], []
    for entry in listing.entries:
        record = entry.record
        by_status[record.status] = by_status.get(record.status, 0) + 1
        for item in record.redactions:
            redactions.append({"handoff": record.id, "field": item.field, "reason": item.reason})
        repository = record.project.repository
        if repository is not None and repository.remote_hint:
            external.append({"handoff": record.id, "kind": "git_remote", "ref": repository.remote_hint})
        for evidence in record.evidence:
            if evidence.type == "url" or (evidence.ref or "").startswith(("http://", "https://")):
                external.append({"handoff": record.id, "kind": "url", "ref": evidence.ref})
        for artifact in record.artifacts:
            if not _inside_root(paths.root, artifact.path):
                external.append({"handoff": record.id, "kind": "path_outside_root", "ref": artifact.path})
            if artifact.sensitive:
                sensitive.append({"handoff": record.id, "path": artifact.path})
    return {
        "ok": True,
        "handoffs": len(listing.entries),
        "by_status": dict(sorted(by_status.items())),
        "redactions": redactions,
        "external_refs": external,
        "sensitive_artifacts": sensitive,
        "problems": problems_of(paths, listing),
    }


def _inside_root(root: Path, path: str) -> bool:
    target = Path(path) if Path(path).is_absolute() else root / path
    try:
        target.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def migrate(start: Path | str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """Move a legacy ``.threadline/`` to ``.baton/`` (rewrites only ``$schema``); explicit request only."""
    paths = require_project(start)
    return {"ok": True, **store.migrate_legacy(paths.root, dry_run=dry_run)}


def report(start: Path | str | None = None, session: str | None = None, *, html: Path | str | None = None,
           scope: Scope | None = None) -> dict[str, Any]:
    """A session's report (default: the project's latest session ``scope`` sees): the data of its metrics log,
    and the self-contained HTML page written to ``html`` (default: beside the log, ``<log>.html``)."""
    from baton_engine.metrics import html as page

    paths = require_project(start)
    logs = read_metrics.sessions(paths.data_dir, scope)
    log = read_metrics.find_session(logs, session)
    if log is None:
        raise NotFoundError(read_metrics.missing(paths.data_dir, scope, session))
    data = read_metrics.report_data(log)
    target = Path(html) if html is not None else log.path.with_suffix(".html")
    try:
        store.atomic_write(target, page.render(data).encode("utf-8"))  # replaces a symlink, never follows it
    except OSError as exc:
        raise UserInputError(f"cannot write the report to {target}: {exc.strerror or type(exc).__name__}; "
                             "pass --html with a writable path") from None
    return {"ok": True, "html": str(target), **data}
