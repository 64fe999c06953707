"""capture.build_draft / add_item on a real git project with the real redactor."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from baton_engine.errors import ConflictError, UserInputError
from baton_engine.handoff import capture, gitinfo
from baton_engine.handoff.ids import is_uuid7

# Fake secrets built from pieces, so no scanner mistakes this file for a leak.
FAKE_OPENAI_KEY = "sk-proj-" + "FAKEbaton" + "0123456789abcdefghijKLMNOP"
FAKE_GITHUB_TOKEN = "ghp_" + "FAKEbaton" + "0123456789abcdefghijKLMNOPQ"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def payload(**extra: object) -> dict[str, object]:
    return {"title": "Fix login", "objective": "Users can log in", "state": "handler patched", **extra}


def test_fills_identity_ids_timestamps_and_repository(git_project: Path, assert_conforms) -> None:
    record, redactions = capture.build_draft(
        payload(decisions=[{"decision": "keep sessions"}, {"decision": "drop cookies"}],
                open_items=[{"description": "add test", "suggested_action": "write test_login"}],
                failed_attempts=[{"attempt": "bump the framework", "outcome": "breaks CI"}],
                artifacts=[{"path": "src/app.py"}]),
        git_project, now=NOW)
    head = gitinfo.snapshot(git_project).head
    assert is_uuid7(record.id)
    assert record.status == "draft" and redactions == []
    assert record.created_at == record.updated_at == "2026-01-02T03:04:05Z"
    canonical = str(git_project.resolve()).encode()
    assert record.project.id == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert record.project.root_hint == "proj"
    assert record.project.repository.head == head and record.project.repository.dirty is False
    assert [d.id for d in record.decisions] == ["D-001", "D-002"]
    assert record.open_items[0].id == "O-001" and record.failed_attempts[0].id == "F-001"
    artifact = record.artifacts[0]
    assert artifact.revision == f"git:{head}"
    assert artifact.content_hash == gitinfo.sha256_file(git_project / "src/app.py")
    assert_conforms(record.to_json_dict())


def test_nested_payload_form_is_accepted(git_project: Path) -> None:
    record, _ = capture.build_draft(
        {"work": {"title": "T", "objective": "O", "definition_of_done": ["tests pass"]},
         "summary": {"current_state": "S", "completed": ["step 1"]}}, git_project)
    assert record.work.definition_of_done == ["tests pass"] and record.summary.completed == ["step 1"]


def test_out_of_root_artifact_is_kept_but_never_read(git_project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("private", encoding="utf-8")
    record, _ = capture.build_draft(payload(artifacts=[{"path": str(outside)}, {"path": "../outside.txt"}]),
                                    git_project)
    assert [a.content_hash for a in record.artifacts] == [None, None]


def test_session_id_is_hashed(git_project: Path) -> None:
    record, _ = capture.build_draft(payload(origin={"session_id": "session-1234", "harness": "codex"}), git_project)
    assert record.origin.session_id == "sha256:" + hashlib.sha256(b"session-1234").hexdigest()[:16]
    assert "session-1234" not in record.model_dump_json()


def test_secrets_are_redacted_and_recorded(git_project: Path) -> None:
    record, redactions = capture.build_draft(
        payload(open_items=[{"description": "rotate", "suggested_action": f"use {FAKE_OPENAI_KEY}"}]), git_project)
    text = record.model_dump_json()
    assert FAKE_OPENAI_KEY not in text
    assert [r.field for r in redactions] == ["open_items[0].suggested_action"]
    assert [r.field for r in record.redactions] == ["open_items[0].suggested_action"]


def test_evidence_output_becomes_digest_and_bounded_redacted_summary(git_project: Path) -> None:
    output = "x" * 3000 + f" token {FAKE_GITHUB_TOKEN} " + "y" * 3000
    record, redactions = capture.build_draft(
        payload(evidence=[{"type": "command", "claim": "tests pass", "ref": "pytest", "output": output}]),
        git_project)
    evidence = record.evidence[0]
    assert evidence.digest == "sha256:" + hashlib.sha256(output.encode()).hexdigest()
    assert len(evidence.result) <= capture.EVIDENCE_SUMMARY_CHARS
    assert "chars omitted" in evidence.result
    assert FAKE_GITHUB_TOKEN not in record.model_dump_json()
    assert [r.field for r in redactions] == ["evidence[0].result"]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"objective": "o", "state": "s"}, "work.title (flag --title)"),
        (payload(decisions=[{"decsion": "typo"}]), "decisions[0].decsion"),
        (payload(open_items=[{"description": "d", "priority": "urgent"}]), "open_items[0].priority"),
        (payload(evidence=[{"claim": "c", "type": "rumour"}]), "evidence[0].type"),
        (payload(transcript=["hi"]), "transcript"),
    ],
)
def test_bad_payload_names_the_field(git_project: Path, bad: dict[str, object], named: str) -> None:
    with pytest.raises(UserInputError) as caught:
        capture.build_draft(bad, git_project)
    assert named in str(caught.value)


def test_non_object_payload_is_an_input_error(git_project: Path) -> None:
    with pytest.raises(UserInputError, match="expected a JSON object"):
        capture.build_draft(["not", "a", "dict"], git_project)  # type: ignore[arg-type]


def test_add_item_assigns_next_id_and_redacts(git_project: Path) -> None:
    record, _ = capture.build_draft(payload(decisions=[{"decision": "one", "id": "D-007"}]), git_project)
    updated = capture.add_item(record, "decision", {"decision": f"store {FAKE_OPENAI_KEY} in vault"})
    assert [d.id for d in updated.decisions] == ["D-007", "D-008"]
    assert FAKE_OPENAI_KEY not in updated.model_dump_json()
    assert [r.field for r in updated.redactions] == ["decisions[1].decision"]
    assert record.decisions[-1].id == "D-007"  # the input record is not mutated


def test_an_item_already_recorded_is_not_added_again(git_project: Path) -> None:
    """Issue 31 item 5: a brief listing D-001..D-005 with one text. The same decision (spacing and case aside)
    leaves the record as it is; a different one, an open item with the same words, and evidence are added."""
    record, _ = capture.build_draft(payload(decisions=[{"decision": "Keep the parser cache", "rationale": "stable"}]),
                                    git_project)
    again = capture.add_item(record, "decision", {"decision": "keep the  parser cache", "rationale": "Stable"})
    assert again is record and [d.id for d in again.decisions] == ["D-001"]
    other_reason = capture.add_item(record, "decision", {"decision": "Keep the parser cache", "rationale": "fast"})
    assert [d.decision for d in other_reason.decisions] == ["Keep the parser cache"] * 2  # a second reason is news
    assert len(capture.add_item(record, "open_item", {"description": "Keep the parser cache"}).open_items) == 1
    run = {"type": "command", "ref": "pytest -q", "claim": "the tests pass", "result": "3 passed"}
    twice = capture.add_item(capture.add_item(record, "evidence", run), "evidence", run)
    assert len(twice.evidence) == 2  # each run is evidence of its own
    item = capture.add_item(record, "open_item", {"description": "rerun the benchmark", "priority": "high"})
    assert capture.add_item(item, "open_item", {"description": "Rerun the benchmark", "priority": "high"}) is item
    assert len(capture.add_item(item, "open_item", {"description": "rerun the benchmark"}).open_items) == 2


def test_add_item_refuses_ready_records(git_project: Path) -> None:
    record, _ = capture.build_draft(payload(), git_project)
    ready = record.model_copy(update={"status": "ready"})
    with pytest.raises(ConflictError, match="immutable"):
        capture.add_item(ready, "open_item", {"description": "more"})


def test_add_item_rejects_unknown_kind_and_bad_item(git_project: Path) -> None:
    record, _ = capture.build_draft(payload(), git_project)
    with pytest.raises(UserInputError, match="unknown item kind"):
        capture.add_item(record, "note", {"text": "x"})  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="failed attempt: attempt"):
        capture.add_item(record, "failed_attempt", {"outcome": "no attempt given"})


def test_same_input_same_bytes_apart_from_the_id(git_project: Path) -> None:
    first, _ = capture.build_draft(payload(), git_project, now=NOW)
    second, _ = capture.build_draft(payload(), git_project, now=NOW)
    a, b = first.to_json_dict(), second.to_json_dict()
    assert a.pop("id") != b.pop("id")
    assert a == b
