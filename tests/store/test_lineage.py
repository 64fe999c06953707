"""Lineage on real stores: continue, fork, merge (with conflicts and resolutions), amend."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_engine.errors import ConflictError, UserInputError
from baton_engine.handoff import lineage
from baton_engine.handoff.model import HandoffRecord, transition
from baton_engine.handoff.store import HandoffStore, find_project_root, init_project

STAMP = "2026-02-01T10:00:00Z"


@pytest.fixture
def store(tmp_path: Path) -> HandoffStore:
    init_project(tmp_path)
    return HandoffStore(find_project_root(tmp_path))


@pytest.fixture
def ready(make_record) -> HandoffRecord:
    record = make_record(
        status="ready",
        decisions=[{"id": "D-001", "decision": "use filelock", "made_at": STAMP, "evidence_ids": ["E-001"]}],
        evidence=[{"id": "E-001", "type": "test", "claim": "store tests pass", "captured_at": STAMP}],
        open_items=[{"id": "O-001", "description": "write lineage", "suggested_action": "add lineage.py"}],
        lineage={"branch_label": "main-line"},
        x_extension={"kept": True},
    )
    return record


def test_continue_carries_state_into_a_new_draft(ready: HandoffRecord, assert_conforms) -> None:
    child = lineage.continue_from(ready, changes={"summary": {"current_state": "lineage started"}}, now=STAMP)
    assert child.id != ready.id and child.status == "draft"
    assert (child.created_at, child.updated_at) == (STAMP, STAMP)
    assert child.lineage.parents == [ready.id] and child.lineage.relation == "continue"
    assert child.lineage.branch_label == "main-line"
    assert child.summary.current_state == "lineage started"
    assert child.summary.completed == ready.summary.completed
    assert child.decisions == ready.decisions and child.x_extension == {"kept": True}
    assert child.validation.status == "not_run" and child.automation.trigger == "manual"
    assert_conforms(child.to_json_dict())


def test_fork_is_an_immutable_linked_child(store: HandoffStore, ready: HandoffRecord) -> None:
    parent_path = store.save(ready)
    before = parent_path.read_bytes()
    child = lineage.fork(ready, "  try sqlite index  ")
    store.save(child)
    assert child.lineage.relation == "fork" and child.lineage.branch_label == "try sqlite index"
    assert child.lineage.parents == [ready.id]
    assert parent_path.read_bytes() == before
    assert store.load(child.id).lineage.parents == [ready.id]
    for bad in ("", "   ", "two\nlines", "x" * 121):
        with pytest.raises(UserInputError, match="label"):
            lineage.fork(ready, bad)


def test_changes_cannot_touch_identity_and_must_stay_valid(ready: HandoffRecord) -> None:
    with pytest.raises(UserInputError, match="may not set id, lineage"):
        lineage.continue_from(ready, changes={"id": "x", "lineage": {}})
    with pytest.raises(UserInputError, match=r"would be invalid at: work\.title"):
        lineage.continue_from(ready, changes={"work": {"title": ""}})
    with pytest.raises(UserInputError, match="JSON object"):
        lineage.continue_from(ready, changes=["nope"])  # type: ignore[arg-type]


def test_amend_supersedes_the_parent_and_links_the_child(store: HandoffStore, ready: HandoffRecord) -> None:
    store.save(ready)
    child, parent = lineage.commit_amendment(store, ready, {"work": {"objective": "corrected objective"}}, now=STAMP)
    assert child.lineage.relation == "amend" and child.lineage.parents == [ready.id]
    assert child.work.objective == "corrected objective" and child.work.title == ready.work.title
    assert parent.status == "superseded" and store.load(ready.id).status == "superseded"
    assert store.load(ready.id).work.objective == ready.work.objective  # content untouched
    assert store.load(child.id).status == "draft"
    assert parent.status_history[-1]["reason"] == f"amended by {child.id}"
    with pytest.raises(ConflictError, match="only ready or resumed"):
        lineage.amend(child, {"work": {"objective": "again"}})


def test_merge_refuses_without_resolution_and_lists_conflicts(ready: HandoffRecord) -> None:
    left = lineage.fork(ready, "left")
    right = lineage.fork(ready, "right")
    left = HandoffRecord.model_validate({**left.to_json_dict(), "decisions": [
        *left.to_json_dict()["decisions"], {"id": "D-002", "decision": "index in sqlite", "made_at": STAMP}]})
    right = HandoffRecord.model_validate({**right.to_json_dict(), "decisions": [
        *right.to_json_dict()["decisions"], {"id": "D-002", "decision": "no index at all", "made_at": STAMP}]})
    with pytest.raises(ConflictError, match=r"decisions conflict \(D-002, D-003") as caught:
        lineage.merge([left, right], None)
    assert "sqlite" not in str(caught.value)  # ids only, no user text in errors
    with pytest.raises(ConflictError, match="needs a written resolution"):
        lineage.merge([ready, lineage.fork(ready, "other")], "   ")
    with pytest.raises(UserInputError, match="at least two different"):
        lineage.merge([left, left], "x")


def test_merge_joins_parents_with_a_resolution_decision(ready: HandoffRecord, assert_conforms) -> None:
    left = lineage.continue_from(ready, changes={
        "decisions": [*ready.to_json_dict()["decisions"],
                      {"id": "D-002", "decision": "index in sqlite", "made_at": STAMP, "evidence_ids": ["E-002"]}],
        "evidence": [*ready.to_json_dict()["evidence"],
                     {"id": "E-002", "type": "command", "claim": "benchmark ran", "captured_at": STAMP}],
        "summary": {"completed": ["store"]},
    })
    right = lineage.fork(ready, "right")
    right = HandoffRecord.model_validate({**right.to_json_dict(),
        "decisions": [*right.to_json_dict()["decisions"], {"id": "D-002", "decision": "no index", "made_at": STAMP}],
        "evidence": [*right.to_json_dict()["evidence"],
                     {"id": "E-002", "type": "test", "claim": "other check", "captured_at": STAMP}]})
    merged = lineage.merge([left, right], {"decision": "Keep the sqlite index", "rationale": "faster list"}, now=STAMP)
    assert merged.status == "draft" and merged.lineage.relation == "merge"
    assert merged.lineage.parents == [left.id, right.id]
    by_id = {d.id: d for d in merged.decisions}
    assert [d.id for d in merged.decisions] == ["D-001", "D-002", "D-003", "D-004"]  # shared D-001 once
    assert by_id["D-002"].decision == "index in sqlite" and by_id["D-002"].evidence_ids == ["E-002"]
    assert by_id["D-003"].decision == "no index"
    resolution = by_id["D-004"]
    assert resolution.decision == "Keep the sqlite index" and resolution.rationale == "faster list"
    assert resolution.resolves == ["D-002", "D-003"]
    assert merged.lineage.merge_basis == ["D-004"] and merged.lineage.resolution == "D-004"
    assert [e.id for e in merged.evidence] == ["E-001", "E-002", "E-003"]
    assert {e.id: e.claim for e in merged.evidence}["E-003"] == "other check"
    assert [o.id for o in merged.open_items] == ["O-001"]
    assert merged.summary.completed == ["store"]
    assert merged.summary.current_state.splitlines() == [
        f"[{left.short_id}] {left.summary.current_state}", f"[{right.short_id}] {right.summary.current_state}"]
    assert_conforms(merged.to_json_dict())


def test_merge_rewrites_blocked_by_references_after_renumbering(make_record) -> None:
    items = lambda text: [  # noqa: E731
        {"id": "O-001", "description": text},
        {"id": "O-002", "description": f"after {text}", "blocked_by": ["O-001"]},
    ]
    first, second = make_record(open_items=items("alpha")), make_record(open_items=items("beta"))
    merged = lineage.merge([first, second], "take both")
    assert [(o.id, o.blocked_by) for o in merged.open_items] == [
        ("O-001", []), ("O-002", ["O-001"]), ("O-003", []), ("O-004", ["O-003"])]


def test_merge_refuses_records_of_different_projects(make_record) -> None:
    other = make_record(project={"id": "sha256:" + "f" * 64, "root_hint": "elsewhere"})
    with pytest.raises(UserInputError, match="different projects"):
        lineage.merge([make_record(), other], "x")


def test_merged_and_forked_children_save_and_validate_in_a_store(store: HandoffStore, ready: HandoffRecord) -> None:
    store.save(ready)
    a, b = lineage.fork(ready, "a"), lineage.fork(ready, "b")
    store.save(a)
    store.save(b)
    merged = lineage.merge([store.load(a.id), store.load(b.id)], "Resolution: a and b agree")
    store.save(merged)
    assert store.load(merged.id).lineage.parents == [a.id, b.id]
    assert store.list().problems == []
    assert transition(store.load(merged.id), "ready").status == "ready"


def test_the_validator_accepts_merge_and_fork_lineage(store: HandoffStore, ready: HandoffRecord) -> None:
    from baton_engine.handoff.config import BatonConfig
    from baton_engine.handoff.validate import validate_record

    store.save(ready)
    a, b = lineage.fork(ready, "a"), lineage.fork(ready, "b")
    merged = lineage.merge([a, b], "take a's approach")
    known = {ready.id, a.id, b.id}
    for record in (a, merged):
        checks = {c.name: c for c in validate_record(record, store.paths.root, BatonConfig(), known_ids=known).checks}
        assert checks["lineage"].status == "pass", checks["lineage"].detail
        assert checks["references"].status == "pass", checks["references"].detail
