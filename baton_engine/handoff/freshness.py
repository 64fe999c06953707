"""Freshness: has the working tree moved since the handoff was captured?

Why: a resume brief must never apply stale assumptions silently. Two facts are compared with
the tree now: the git head recorded at capture, and each artifact's recorded sha256. Outside
git (or when git is missing) the head is None and only artifact drift is checked. Nothing is
run but ``git rev-parse`` (through ``gitinfo``), and only files inside the project root (or a
configured allowed root) are hashed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton_engine.handoff import gitinfo
from baton_engine.handoff.model import Freshness, HandoffRecord
from baton_engine.handoff.validate import artifact_declared_deleted, contain_path


@dataclass(frozen=True)
class ArtifactDrift:
    """One artifact that no longer matches its recorded hash: ``missing``, ``changed`` or ``unreadable``."""

    path: str
    reason: str


@dataclass(frozen=True)
class FreshnessReport:
    stale: bool
    git_head_at_capture: str | None
    git_head_now: str | None
    drifted_artifacts: tuple[ArtifactDrift, ...] = ()
    reasons: tuple[str, ...] = ()
    checked_artifacts: int = 0
    notes: tuple[str, ...] = field(default=())

    def to_model(self) -> Freshness:
        """The record's ``validation.freshness`` block (the drift list is kept as an extension field)."""
        return Freshness.model_validate({
            "git_head_at_capture": self.git_head_at_capture,
            "git_head_now": self.git_head_now,
            "stale": self.stale,
            "drifted_artifacts": [{"path": d.path, "reason": d.reason} for d in self.drifted_artifacts],
        })


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "none"


def _head_reasons(record: HandoffRecord, root: Path,
                  repo: gitinfo.RepoState) -> tuple[str | None, str | None, list[str]]:
    repository = record.project.repository
    at_capture = repository.head if repository is not None else None
    now = repo.head
    if repository is None or repository.vcs not in (None, "git"):
        return at_capture, now, []
    if at_capture and now is None:
        if repo.in_repo:
            return at_capture, now, [f"git head was {_short(at_capture)} at capture; the repository has no HEAD now"]
        return at_capture, now, [f"git head was {_short(at_capture)} at capture; {root.name or root} is not a git "
                                 "repository now"]
    if at_capture and now and at_capture != now:
        return at_capture, now, [f"git head moved from {_short(at_capture)} to {_short(now)} since capture"]
    if at_capture is None and now is not None:
        return at_capture, now, [f"the repository had no commit at capture; head is {_short(now)} now"]
    return at_capture, now, []


def _artifact_drift(record: HandoffRecord, root: Path, allowed_roots: list[str]) -> tuple[list[ArtifactDrift], int]:
    drifted: list[ArtifactDrift] = []
    checked = 0
    for artifact in record.artifacts:
        if not artifact.content_hash:
            continue
        verdict = contain_path(artifact.path, root, allowed_roots)
        if verdict.problem is not None or verdict.path is None:
            continue  # out-of-root paths are the validator's finding; never hash outside the project
        checked += 1
        target = verdict.path
        if not target.exists():
            if not artifact_declared_deleted(artifact):
                drifted.append(ArtifactDrift(artifact.path, "missing"))
            continue
        if target.is_dir():
            continue
        try:
            current = gitinfo.sha256_file(target)
        except OSError:
            drifted.append(ArtifactDrift(artifact.path, "unreadable"))
            continue
        if current != artifact.content_hash:
            drifted.append(ArtifactDrift(artifact.path, "changed"))
    return drifted, checked


def check_freshness(
    record: HandoffRecord | Mapping[str, Any], root: Path, *, allowed_roots: list[str] | None = None,
    repo: gitinfo.RepoState | None = None,
) -> FreshnessReport:
    """Compare the record's git head and artifact hashes with ``root`` now (``repo``: git's view of ``root``
    when the caller already read it)."""
    if not isinstance(record, HandoffRecord):
        record = HandoffRecord.model_validate(record)
    root = Path(root)
    at_capture, now, reasons = _head_reasons(
        record, root, repo if repo is not None else gitinfo.snapshot(root, remote=False))
    drifted, checked = _artifact_drift(record, root, list(allowed_roots or []))
    reasons += [f"artifact {d.path} {d.reason} since capture" for d in drifted]
    notes = () if now is not None else ("no git head available: only artifact hashes were compared",)
    return FreshnessReport(
        stale=bool(reasons),
        git_head_at_capture=at_capture,
        git_head_now=now,
        drifted_artifacts=tuple(drifted),
        reasons=tuple(reasons),
        checked_artifacts=checked,
        notes=notes,
    )
