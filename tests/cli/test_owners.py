"""``baton handoff list`` / ``baton resume`` show a record's owner (platform + hashed gateway session key) and
filter by it: the operator of a shared gateway can see whose handoff is whose and resume one conversation's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.operations.handoffs import ready_handoff

KEY_1 = "agent:main:telegram:dm:1001"
KEY_2 = "agent:main:telegram:dm:2002"


@pytest.fixture
def project(baton, git_project: Path) -> Path:
    assert baton("init", "--json", cwd=git_project).code == 0
    return git_project


def _ready(project: Path, title: str, owner: dict[str, str] | None) -> str:
    payload = {"title": title, "objective": f"{title} objective", "current_state": "done for now",
               "open_items": [{"description": "carry on", "suggested_action": "carry on",
                               "acceptance_check": "it is carried on"}]}
    origin = {"harness": "generic", "owner": owner} if owner else None
    created = checkpoint_create(project, payload, origin=origin)
    return ready_handoff(project, created["handoff"]["id"])["handoff"]["id"]


def test_list_and_resume_show_and_filter_owners(baton, project: Path) -> None:
    mine = _ready(project, "User one", {"platform": "telegram", "conversation_id": KEY_1})
    theirs = _ready(project, "User two", {"platform": "telegram", "conversation_id": KEY_2})
    local = _ready(project, "Local work", {"platform": "cli"})
    listed = baton("handoff", "list", "--json", cwd=project).data["handoffs"]
    owners = {entry["id"]: entry["owner"] for entry in listed}
    assert owners[local] == {"platform": "cli", "conversation_id": None}
    assert owners[mine]["conversation_id"].startswith("sha256:") and KEY_1 not in json.dumps(listed)
    one = baton("handoff", "list", "--json", "--session-key", KEY_1, cwd=project).data["handoffs"]
    assert [entry["id"] for entry in one] == [mine]
    by_hash = baton("handoff", "list", "--json", "--session-key", owners[theirs]["conversation_id"], cwd=project)
    assert [entry["id"] for entry in by_hash.data["handoffs"]] == [theirs]
    telegram = baton("handoff", "list", "--json", "--platform", "telegram", cwd=project).data["handoffs"]
    assert {entry["id"] for entry in telegram} == {mine, theirs}
    table = baton("handoff", "list", cwd=project)
    assert "owner" in table.stdout and "cli" in table.stdout
    assert baton("resume", "--json", cwd=project).data["handoff"]["id"] == local  # project-wide: the latest
    resumed = baton("resume", "--json", "--session-key", KEY_1, cwd=project)
    assert resumed.data["handoff"]["id"] == mine and resumed.data["handoff"]["owner"] == owners[mine]
    refused = baton("resume", theirs, "--json", "--session-key", KEY_1, cwd=project)
    assert refused.code == 4 and refused.data["error"]["kind"] == "not_found"
