"""Real projects for the policy tests: a git repository in a tmp dir and a valid record for it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from baton_engine.handoff.config import BatonConfig
from baton_engine.handoff.gitinfo import sha256_file, snapshot
from batontest.gitrepo import commit_all, git

RECORD_ID = "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f50"
PARENT_ID = "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"
OTHER_PARENT_ID = "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"
TS = "2026-11-30T02:00:00Z"


def make_project(root: Path, *, use_git: bool = True) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "README.md").write_text("# demo\n")
    if use_git:
        git(root, "init", "-q", "-b", "main")
        commit_all(root, "initial")
    return root


def record_data(root: Path) -> dict[str, Any]:
    """A complete, valid v0.1 record describing ``root`` as it is now."""
    head = snapshot(root).head
    return {
        "$schema": "https://baton.dev/schemas/handoff/v0.1.json",
        "schema_version": "0.1",
        "id": RECORD_ID,
        "kind": "handoff",
        "status": "draft",
        "flags": [],
        "created_at": TS,
        "updated_at": TS,
        "project": {
            "id": "sha256:" + "ab" * 32,
            "root_hint": root.name,
            "repository": {"vcs": "git", "remote_hint": None, "head": head, "dirty": False} if head else None,
        },
        "origin": {"harness": "generic", "adapter_version": None, "session_id": None, "model": None, "actor": None},
        "work": {"title": "Fix greeting", "objective": "Greet the user by name", "scope": ["src/"],
                 "constraints": [], "definition_of_done": ["greeting uses the name"]},
        "summary": {"completed": ["located the greeting"], "current_state": "greeting found in src/app.py",
                    "why_it_matters": None},
        "decisions": [{"id": "D-001", "decision": "Keep print()", "rationale": "simple",
                       "alternatives_considered": [], "evidence_ids": ["E-001"], "made_at": TS}],
        "artifacts": [{"path": "src/app.py", "role": "modified", "description": "greeting",
                       "revision": f"git:{head}" if head else None,
                       "content_hash": sha256_file(root / "src" / "app.py"), "sensitive": False}],
        "evidence": [{"id": "E-001", "type": "file", "claim": "greeting lives here", "ref": "src/app.py:1",
                      "captured_at": TS, "result": None, "digest": None}],
        "open_items": [{"id": "O-001", "priority": "high", "description": "use the name",
                        "suggested_action": "edit src/app.py", "blocked_by": [],
                        "acceptance_check": "python src/app.py prints the name"}],
        "risks": [],
        "validation": {"status": "not_run", "validated_at": None, "checks": [], "freshness": None},
        "lineage": {"parents": [], "relation": "root", "branch_label": None, "merge_basis": []},
        "automation": {"trigger": "manual", "score": None, "reasons": []},
        "redactions": [],
        "failed_attempts": [],
    }


def store_record(root: Path, record_id: str) -> None:
    """A stored record with ``record_id`` (what lineage lookups read)."""
    handoffs = root / ".baton" / "handoffs"
    handoffs.mkdir(parents=True, exist_ok=True)
    data = record_data(root)
    data["id"] = record_id
    (handoffs / f"20261130T020000Z--{record_id[-8:]}.json").write_text(json.dumps(data))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def data(project: Path) -> dict[str, Any]:
    return copy.deepcopy(record_data(project))


@pytest.fixture
def config() -> BatonConfig:
    return BatonConfig()


@pytest.fixture
def helpers():
    """The module's helpers for tests (conftest modules are not importable under importlib mode)."""
    from types import SimpleNamespace

    return SimpleNamespace(git=git, commit_all=commit_all, make_project=make_project, record_data=record_data,
                           store_record=store_record, RECORD_ID=RECORD_ID, PARENT_ID=PARENT_ID,
                           OTHER_PARENT_ID=OTHER_PARENT_ID)
