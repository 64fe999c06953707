"""Records and helpers for the brief and detector tests: records built from plain dicts, as a capture
would store them; golden-file comparison (``BATON_UPDATE_GOLDEN=1`` rewrites)."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from baton_engine.handoff.model import HandoffRecord

RECORD_ID = "01936f3e-8c5a-7b2e-9f10-4a5b6c7d8e9f"
PARENT_A = "01936f3e-0000-7000-8000-00000000aaaa"
PARENT_B = "01936f3e-0000-7000-8000-00000000bbbb"
HEAD = "3f2a9c1d4e5b6a7988776655443322110fedcba9"
HEAD_NOW = "9d8c7b6a5f4e3d2c1b0a99887766554433221100"
STAMP = "2026-11-30T01:15:00Z"


def minimal_data() -> dict[str, Any]:
    return {
        "id": RECORD_ID,
        "status": "draft",
        "created_at": STAMP,
        "updated_at": STAMP,
        "project": {"id": "sha256:" + "ab" * 32, "root_hint": "baton-demo", "repository": None},
        "work": {"title": "Fix flaky login test", "objective": "Make tests/test_login.py pass reliably."},
        "summary": {"current_state": "Reproduced the flake locally; root cause not found yet."},
    }


def full_data() -> dict[str, Any]:
    data = minimal_data()
    data["status"] = "ready"
    data["project"]["repository"] = {"vcs": "git", "remote_hint": "github.com/acme/demo", "head": HEAD, "dirty": False}
    data["work"].update(
        {
            "scope": ["auth/", "tests/test_login.py"],
            "constraints": ["Do not change the public login API.", "Keep Python 3.11 support."],
            "definition_of_done": ["tests/test_login.py passes 50 times in a row"],
        }
    )
    data["summary"].update(
        {
            "completed": ["Added a deterministic clock fixture.", "Removed the sleep-based retry."],
            "current_state": "The session cookie expiry races the test clock.\nA fix is half-written in auth/session.py.",
            "why_it_matters": "The flake blocks every merge to main.",
        }
    )
    data["decisions"] = [
        {"id": "D-002", "decision": "Inject the clock into SessionStore.", "rationale": "Testable without sleeps.",
         "evidence_ids": ["E-001"], "made_at": STAMP},
        {"id": "D-001", "decision": "Keep cookie format unchanged.", "made_at": STAMP},
    ]
    data["artifacts"] = [
        {"path": "auth/session.py", "role": "modified", "description": "clock injection, half done",
         "revision": f"git:{HEAD}", "content_hash": "sha256:" + "cd" * 32},
        {"path": "tests/conftest.py", "role": "created", "description": "frozen clock fixture"},
        {"path": "deploy/prod.env", "role": "read", "sensitive": True},
    ]
    data["evidence"] = [
        {"id": "E-001", "type": "test", "claim": "Flake reproduced 3 of 20 runs", "ref": "pytest -x tests/test_login.py",
         "captured_at": STAMP, "result": "3 failed, 17 passed", "digest": "sha256:" + "ef" * 32},
        {"id": "E-002", "type": "commit", "claim": "Retry removed", "ref": HEAD, "captured_at": STAMP},
    ]
    data["open_items"] = [
        {"id": "O-003", "priority": "low", "description": "Document the clock fixture."},
        {"id": "O-002", "priority": "high", "description": "Finish clock injection in SessionStore.",
         "suggested_action": "Pass clock=FrozenClock() through SessionStore.__init__ and use it in expiry checks.",
         "acceptance_check": "pytest tests/test_login.py -x --count 50"},
        {"id": "O-001", "priority": "high", "description": "Update callers of SessionStore.",
         "suggested_action": "grep for SessionStore( and pass the default clock.", "blocked_by": ["O-002"]},
    ]
    data["risks"] = [{"description": "Other tests rely on real time.", "severity": "medium",
                      "mitigation": "Run the full suite before merging."}]
    data["failed_attempts"] = [
        {"id": "F-001", "attempt": "Increase the retry sleep to 2 s.", "outcome": "Still flaky, and 40 s slower.",
         "recorded_at": STAMP},
    ]
    data["validation"] = {"status": "pass", "validated_at": STAMP,
                          "checks": [{"name": "actionability", "status": "pass", "detail": ""}]}
    return data


def record(data: dict[str, Any]) -> HandoffRecord:
    return HandoffRecord.model_validate(copy.deepcopy(data))


@dataclass(frozen=True)
class Drift:
    path: str
    reason: str


@dataclass
class FakeFreshness:
    """The attributes ``render_brief`` reads from freshness.FreshnessReport (a plain value object)."""

    stale: bool
    git_head_at_capture: str | None = HEAD
    git_head_now: str | None = HEAD
    drifted_artifacts: list[Any] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE_ENV = "BATON_UPDATE_GOLDEN"


def check_golden(name: str, text: str) -> None:
    """Compare with ``golden/<name>``; ``BATON_UPDATE_GOLDEN=1`` rewrites the file instead."""
    path = GOLDEN_DIR / name
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; run with {UPDATE_ENV}=1 to create it, then review it")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs; review, then rerun with {UPDATE_ENV}=1"
