"""The operations layer called directly, as the engine tools and the MCP server will: same dicts as the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from baton_engine.errors import ConflictError
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.operations.handoffs import init, record_item, show_handoff, status
from baton_engine.results import INTERNAL_ERROR_EXIT_CODE, call, error_result


def test_call_turns_errors_into_the_error_dict(git_project: Path) -> None:
    result, code = call(status, git_project)
    assert code == 4
    assert result == {"ok": False, "error": {"kind": "not_found", "message": result["error"]["message"]}}
    assert "baton init" in result["error"]["message"]


def test_call_never_raises_and_hides_unexpected_messages() -> None:
    def broken() -> dict:
        raise RuntimeError("prompt text that must not leak")

    result, code = call(broken)
    assert code == INTERNAL_ERROR_EXIT_CODE
    assert result["error"]["kind"] == "internal_error"
    assert "RuntimeError" in result["error"]["message"] and "prompt text" not in result["error"]["message"]


def test_error_details_ride_along() -> None:
    error = ConflictError("merge refused")
    error.details = {"handoff": {"id": "x"}}  # type: ignore[attr-defined]
    assert error_result(error) == {"ok": False, "error": {"kind": "conflict", "message": "merge refused"},
                                              "handoff": {"id": "x"}}


def test_operations_and_cli_print_the_same_json(baton, git_project: Path) -> None:
    init(git_project)
    created = checkpoint_create(git_project, {"title": "T", "objective": "O", "state": "S",
                                                         "artifacts": [{"path": "src/app.py"}]})
    short = created["handoff"]["short_id"]
    direct = show_handoff(git_project, short, format="prompt")
    via_cli = baton("handoff", "show", short, "--json", "--format", "prompt", cwd=git_project)
    assert via_cli.code == 0
    assert json.loads(via_cli.stdout) == direct
    assert via_cli.stdout == json.dumps(direct, indent=2, ensure_ascii=False) + "\n"


def test_recording_a_decision_twice_keeps_one_and_the_brief_lists_it_once(git_project: Path) -> None:
    """Issue 31 item 5: an agent that records the same decision again gets the item it has, not a D-002."""
    init(git_project)
    short = checkpoint_create(git_project, {"title": "T", "objective": "O", "state": "S"})["handoff"]["short_id"]
    decision = {"decision": "keep the parser cache keyed by request hash", "rationale": "stable across retries"}
    first = record_item(git_project, short, "decision", decision)
    second = record_item(git_project, short, "decision", {**decision, "decision": decision["decision"].upper()})
    assert (first["already_recorded"], second["already_recorded"]) == (False, True)
    assert second["item"] == first["item"] and second["handoff"] == first["handoff"]
    brief = show_handoff(git_project, short, format="prompt")
    text = json.dumps(brief)
    assert text.count("keep the parser cache keyed by request hash") == 1 and "D-002" not in text
