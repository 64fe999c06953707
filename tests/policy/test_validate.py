"""The ten checks, table-driven: each mutation of a valid record and the status it must produce."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from batontest.secrets_corpus import SAMPLES_BY_NAME

from baton_engine.handoff.model import HandoffRecord, Validation
from baton_engine.handoff.validate import CHECK_NAMES, contain_path, validate_record

Mutation = Callable[[dict[str, Any], Path], None]


def test_valid_record_passes_every_check_in_order(project: Path, data: dict, config) -> None:
    report = validate_record(HandoffRecord.model_validate(data), project, config)
    assert [c.name for c in report.checks] == list(CHECK_NAMES)
    assert report.status == "pass", [(c.name, c.status, c.detail) for c in report.checks]
    assert report.can_ready and not report.needs_acknowledgement and not report.policy_blocked
    assert report.check("lineage").status == "skipped"


def test_raw_dict_and_model_give_the_same_report(project: Path, data: dict, config) -> None:
    from_dict = validate_record(data, project, config)
    from_model = validate_record(HandoffRecord.model_validate(data), project, config)
    assert from_dict.checks == from_model.checks


def _set(path: str, value: Any) -> Mutation:
    def mutate(data: dict[str, Any], _root: Path) -> None:
        target: Any = data
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return mutate


def _append(path: str, item: Any) -> Mutation:
    def mutate(data: dict[str, Any], _root: Path) -> None:
        target: Any = data
        for key in path.split("."):
            target = target[int(key) if key.isdigit() else key]
        target.append(copy.deepcopy(item))
    return mutate


def _fs(action: Callable[[Path], None]) -> Mutation:
    return lambda _data, root: action(root)


def _both(*mutations: Mutation) -> Mutation:
    def mutate(data: dict[str, Any], root: Path) -> None:
        for m in mutations:
            m(data, root)
    return mutate


def _symlink_out(root: Path) -> None:
    outside = root.parent / "outside-secret.txt"
    outside.write_text("not yours\n")
    os.symlink(outside, root / "src" / "link.txt")


ANTHROPIC = SAMPLES_BY_NAME["anthropic"].secrets[0]
EVIDENCE_2 = {"id": "E-002", "type": "command", "claim": "tests pass", "ref": "pytest -q", "captured_at":
              "2026-11-30T02:00:00Z", "result": "pass", "digest": None}
ARTIFACT = {"path": "src/app.py", "role": "read", "description": None, "revision": None, "content_hash": None,
            "sensitive": False}


@dataclass
class Case:
    id: str
    check: str
    status: str
    mutate: Mutation
    detail_has: str = ""
    overall: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


CASES = [
    # 1 schema
    Case("schema-version", "schema", "fail", _set("schema_version", "0.2"), "schema_version"),
    Case("schema-missing-title", "schema", "fail", _set("work", {"objective": "x"}), "work.title"),
    Case("schema-bad-enum", "schema", "fail", _set("artifacts.0.role", "deleted"), "artifacts.0.role"),
    Case("schema-bad-id", "schema", "fail", _set("id", "not-a-uuid"), "id"),
    Case("schema-uuid4-warns", "schema", "warn", _set("id", "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"), "UUID v7"),
    # 2 references
    Case("refs-unknown-evidence", "references", "fail", _set("decisions.0.evidence_ids", ["E-009"]), "E-009"),
    Case("refs-unknown-blocker", "references", "fail", _set("open_items.0.blocked_by", ["O-042"]), "O-042"),
    Case("refs-duplicate-id", "references", "fail",
         _append("evidence", {**EVIDENCE_2, "id": "E-001"}), "used twice"),
    Case("refs-known-blocker", "references", "pass",
         _append("open_items", {"id": "O-002", "priority": "low", "description": "later", "suggested_action": None,
                                "blocked_by": ["O-001"], "acceptance_check": None})),
    # 3 policy.transcript
    *[Case(f"transcript-{key}", "policy.transcript", "fail", _set(key, [{"role": "user", "content": "hi"}]), key)
      for key in ("messages", "transcript", "turns", "conversation", "raw_conversation", "chat_history")],
    Case("transcript-in-extension", "policy.transcript", "fail",
         _set("work.notes", {"chat_history": "user: hi\nassistant: hello"}), "work.notes.chat_history"),
    Case("transcript-in-artifact-extension", "policy.transcript", "fail",
         _set("artifacts.0.conversation", "user: do it"), "artifacts[0].conversation"),
    Case("transcript-chat-shape", "policy.transcript", "fail",
         _set("extras", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]), "chat messages"),
    Case("transcript-count-is-not-text", "policy.transcript", "pass", _set("automation.inputs_used", {"turns": 12})),
    Case("transcript-too-long", "policy.transcript", "fail", _set("summary.current_state", "x" * 20001), "20001"),
    # 4 policy.secrets
    Case("secret-in-objective", "policy.secrets", "fail", _set("work.objective", f"use {ANTHROPIC}"),
         "work.objective holds a secret-like value (anthropic-api-key)"),
    Case("secret-in-extension-key", "policy.secrets", "fail", _set("work.env", {"DB_PASSWORD": "hunter2hunter2"}),
         "secret-field"),
    Case("redaction-log-is-excluded", "policy.secrets", "pass",
         _set("redactions", [{"field": "work.objective", "reason": "anthropic-api-key",
                              "replacement": "[REDACTED:anthropic-api-key]"}])),
    Case("redacted-marker-passes", "policy.secrets", "pass",
         _set("work.objective", "use [REDACTED:anthropic-api-key] for the smoke test")),
    Case("credential-file-warns", "policy.secrets", "warn",
         _both(_fs(lambda r: (r / ".env").write_text("A=1\n")), _append("artifacts", {**ARTIFACT, "path": ".env"})),
         "credential file"),
    Case("credential-file-sensitive-ok", "policy.secrets", "pass",
         _both(_fs(lambda r: (r / ".env").write_text("A=1\n")),
               _append("artifacts", {**ARTIFACT, "path": ".env", "sensitive": True}))),
    # 5 policy.paths
    Case("path-traversal", "policy.paths", "fail", _set("artifacts.0.path", "src/../../etc/passwd"), "traversal"),
    Case("path-absolute-outside", "policy.paths", "fail", _set("artifacts.0.path", "/etc/hostname"), "outside"),
    Case("path-windows-absolute", "policy.paths", "fail", _set("artifacts.0.path", "C:\\Users\\x\\a.txt"), "Windows"),
    Case("path-symlink-escape", "policy.paths", "fail",
         _both(_fs(_symlink_out), _set("artifacts.0.path", "src/link.txt"), _set("artifacts.0.content_hash", None)),
         "symlink"),
    Case("path-file-evidence-outside", "policy.paths", "fail", _set("evidence.0.ref", "/etc/hosts:3"),
         "evidence[0].ref"),
    Case("path-absolute-inside", "policy.paths", "pass",
         lambda d, r: d["artifacts"][0].__setitem__("path", str(r / "src" / "app.py"))),
    # 6 artifacts
    Case("artifact-missing", "artifacts", "fail", _fs(lambda r: (r / "src" / "app.py").unlink()), "does not exist"),
    Case("artifact-deleted-declared", "artifacts", "pass",
         _both(_fs(lambda r: (r / "src" / "app.py").unlink()), _set("artifacts.0.description", "deleted: obsolete")),
         "declared deleted"),
    Case("artifact-deleted-flag", "artifacts", "pass",
         _both(_fs(lambda r: (r / "src" / "app.py").unlink()), _set("artifacts.0.deleted", True))),
    Case("artifact-directory", "artifacts", "warn",
         _both(_set("artifacts.0.path", "src"), _set("artifacts.0.content_hash", None)), "directory"),
    Case("artifact-changed", "artifacts", "fail",
         _fs(lambda r: (r / "src" / "app.py").write_text("print('changed')\n")), "content hash differs"),
    Case("artifact-bad-hash-format", "artifacts", "fail", _set("artifacts.0.content_hash", "md5:abc"), "sha256"),
    Case("artifact-bad-revision", "artifacts", "fail", _set("artifacts.0.revision", "HEAD~1"), "git:"),
    Case("artifacts-none", "artifacts", "skipped", _set("artifacts", [])),
    # 7 repository
    Case("repo-head-moved-warns", "repository", "warn",
         _set("project.repository.head", "1" * 40), "moved", overall="warn"),
    Case("repo-dirty-unrecorded", "repository", "warn", _set("project.repository.dirty", None), "dirty"),
    Case("repo-missing-in-git", "repository", "warn", _set("project.repository", None), "null"),
    Case("repo-head-not-sha", "repository", "fail", _set("project.repository.head", "main"), "commit sha"),
    # 8 evidence
    Case("evidence-bad-digest", "evidence", "fail", _set("evidence.0.digest", "sha256:XYZ"), "digest"),
    Case("evidence-good-digest", "evidence", "pass", _set("evidence.0.digest", "sha256:" + "0" * 64)),
    Case("evidence-bad-commit", "evidence", "fail",
         _both(_set("evidence.0.type", "commit"), _set("evidence.0.ref", "not-a-sha")), "commit sha"),
    Case("evidence-good-commit", "evidence", "pass",
         _both(_set("evidence.0.type", "commit"), _set("evidence.0.ref", "a" * 40))),
    Case("evidence-ftp-url", "evidence", "fail",
         _both(_set("evidence.0.type", "url"), _set("evidence.0.ref", "ftp://example.test/x")), "http(s)"),
    Case("evidence-https-url", "evidence", "pass",
         _both(_set("evidence.0.type", "url"), _set("evidence.0.ref", "https://example.test/ci/1"))),
    Case("evidence-bad-timestamp", "evidence", "fail", _set("evidence.0.captured_at", "yesterday"), "RFC 3339"),
    # year 1 an hour east of UTC is before datetime.min in UTC: astimezone raises OverflowError, the same finding
    Case("evidence-timestamp-out-of-range", "evidence", "fail",
         _set("evidence.0.captured_at", "0001-01-01T00:00:00+01:00"), "RFC 3339"),
    # 9 actionability
    Case("action-without-check-warns", "actionability", "warn", _set("open_items.0.acceptance_check", None),
         "acceptance_check"),
    Case("nothing-actionable-warns", "actionability", "warn",
         _both(_set("open_items", []), _set("decisions.0.evidence_ids", [])), "nothing to act on"),
    Case("done-satisfied", "actionability", "pass",
         _both(_set("open_items", []), _set("summary.completed", ["Greeting uses the name"])), "definition of done"),
    # 10 lineage
    Case("lineage-parent-stored", "lineage", "pass",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"], "relation": "continue"}),
               _fs(lambda r: _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51")))),
    Case("lineage-parent-missing", "lineage", "fail",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"], "relation": "continue"}),
               _fs(lambda r: _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"))), "not a record"),
    Case("lineage-no-store-warns", "lineage", "warn",
         _set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"], "relation": "fork"}),
         "no handoff store"),
    Case("lineage-relation-without-parent", "lineage", "fail", _set("lineage", {"parents": [], "relation": "amend"}),
         "parents is empty"),
    Case("lineage-merge-without-resolution", "lineage", "fail",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51",
                                            "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"], "relation": "merge"}),
               _fs(lambda r: (_store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"),
                              _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52")))), "resolution"),
    Case("lineage-merge-resolved", "lineage", "pass",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51",
                                            "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"], "relation": "merge"}),
               _set("decisions.0.decision", "Resolution: keep the fork's print()"),
               _fs(lambda r: (_store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"),
                              _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"))))),
    Case("lineage-merge-resolution-id-unknown", "lineage", "fail",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51",
                                            "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"], "relation": "merge",
                                "resolution": "D-007"}),
               _set("decisions.0.decision", "Resolution: text alone does not override a dangling id"),
               _fs(lambda r: (_store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"),
                              _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52")))), "resolution"),
    Case("lineage-merge-resolves-field", "lineage", "pass",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51",
                                            "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"], "relation": "merge",
                                "resolution": "D-001"}),
               _set("decisions.0.resolves", []),
               _fs(lambda r: (_store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"),
                              _store(r, "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f52"))))),
    Case("lineage-merge-one-parent", "lineage", "fail",
         _both(_set("lineage", {"parents": ["0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f51"], "relation": "merge"}),
               _set("decisions.0.decision", "Resolution: keep it")), "at least two parents"),
]


def _store(root: Path, record_id: str) -> None:
    handoffs = root / ".baton" / "handoffs"
    handoffs.mkdir(parents=True, exist_ok=True)
    (handoffs / f"20261130T020000Z--{record_id[-8:]}.json").write_text(json.dumps({"id": record_id}))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_check_table(case: Case, project: Path, data: dict, config) -> None:
    case.mutate(data, project)
    report = validate_record(data, project, config)
    check = report.check(case.check)
    assert check.status == case.status, (check.detail, [(c.name, c.status) for c in report.checks])
    assert case.detail_has in check.detail
    if case.overall:
        assert report.status == case.overall
    expected_overall = {"fail": "fail", "warn": "warn"}.get(case.status)
    if expected_overall == "fail":
        assert report.status == "fail" and not report.can_ready
    elif expected_overall == "warn":
        assert report.status in ("warn", "fail")


def test_secret_never_appears_in_any_detail(project: Path, data: dict, config) -> None:
    data["work"]["objective"] = f"use {ANTHROPIC}"
    data["evidence"][0]["ref"] = f"{ANTHROPIC}/x"
    report = validate_record(data, project, config, recheck=[f"curl -H 'Authorization: Bearer {ANTHROPIC}'"])
    dumped = json.dumps([c.model_dump() for c in report.checks]) + json.dumps(report.rejected_rechecks)
    assert ANTHROPIC not in dumped
    assert report.check("policy.secrets").status == "fail" and report.policy_blocked


def test_schema_failure_still_runs_policy_checks(project: Path, data: dict, config) -> None:
    del data["summary"]
    data["messages"] = [{"role": "user", "content": "hi"}]
    report = validate_record(data, project, config)
    statuses = {c.name: c.status for c in report.checks}
    assert statuses["schema"] == "fail" and statuses["policy.transcript"] == "fail"
    assert statuses["references"] == "skipped" and statuses["lineage"] == "skipped"
    assert [c.name for c in report.checks] == list(CHECK_NAMES)


@pytest.mark.parametrize("garbage", [{}, {"id": 5}, {"work": "x", "turns": None}])
def test_garbage_input_reports_instead_of_raising(garbage: dict, project: Path, config) -> None:
    report = validate_record(garbage, project, config)
    assert report.status == "fail" and report.check("schema").status == "fail"


def test_allowed_roots_admit_outside_paths(project: Path, data: dict, config, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.md").write_text("n\n")
    data["artifacts"][0].update(path=str(shared / "notes.md"), content_hash=None)
    assert validate_record(data, project, config).check("policy.paths").status == "fail"
    config.policy.allowed_roots = [str(shared)]
    report = validate_record(data, project, config)
    assert report.check("policy.paths").status == "pass"
    assert report.check("artifacts").status == "pass"


def test_non_git_directory_skips_repository(tmp_path: Path, helpers, config) -> None:
    root = helpers.make_project(tmp_path / "plain", use_git=False)
    data = helpers.record_data(root)
    report = validate_record(data, root, config)
    assert data["project"]["repository"] is None
    assert report.check("repository").status == "skipped"
    assert report.status == "pass"


def test_contain_path_table(project: Path) -> None:
    assert contain_path("src/app.py", project).path == project / "src" / "app.py"
    assert contain_path("./src/../src/app.py", project).problem is not None
    assert contain_path("~/x", project).problem is not None
    assert contain_path("", project).problem == "empty path"


def test_to_validation_builds_the_record_block(project: Path, data: dict, config) -> None:
    from baton_engine.handoff.freshness import check_freshness

    report = validate_record(data, project, config)
    fresh = check_freshness(data, project)
    block = report.to_validation(fresh, at="2026-11-30T03:00:00Z")
    assert isinstance(block, Validation)
    assert block.status == "pass" and block.validated_at == "2026-11-30T03:00:00Z"
    assert [c.name for c in block.checks] == list(CHECK_NAMES)
    assert block.freshness is not None and block.freshness.stale is False
    assert report.to_validation(fresh.to_model(), at="2026-11-30T03:00:00Z") == block
    HandoffRecord.model_validate({**data, "validation": block.model_dump(mode="json")})


def test_same_input_same_report_bytes(project: Path, data: dict, config) -> None:
    data["work"]["objective"] = f"use {ANTHROPIC}"
    data["artifacts"][0]["path"] = "../escape.txt"
    runs = [validate_record(copy.deepcopy(data), project, config) for _ in range(2)]
    dumps = [json.dumps([c.model_dump(mode="json") for c in r.checks]) for r in runs]
    assert dumps[0] == dumps[1]
    assert runs[0].status == "fail"


def test_missing_root_reports_instead_of_raising(data: dict, config, tmp_path: Path) -> None:
    report = validate_record(data, tmp_path / "does-not-exist", config)
    assert report.check("artifacts").status == "fail"
    assert report.check("repository").status == "warn"  # head recorded, none now


def _stored_file(content: bytes) -> Mutation:
    def write(_data: dict[str, Any], root: Path) -> None:
        handoffs = root / ".baton" / "handoffs"
        handoffs.mkdir(parents=True, exist_ok=True)
        (handoffs / "20261130T020000Z--0000beef.json").write_bytes(content)
    return write


def _unsearchable_artifact_dir(data: dict[str, Any], root: Path) -> None:
    (root / "locked").mkdir()
    (root / "locked" / "notes.md").write_text("n\n")
    data["artifacts"][0].update(path="locked/notes.md", content_hash=None)
    (root / "locked").chmod(0)


# A check that the record's paths or the project's files stop from running fails; validation does not raise.
STOPPED = [
    pytest.param("artifacts", "OSError", _set("artifacts.0.path", "a" * 300), id="path-too-long-to-stat"),
    pytest.param("policy.paths", "RuntimeError",
                 _both(_fs(lambda r: (r / "loop").symlink_to("loop")), _set("artifacts.0.path", "loop")),
                 id="path-is-a-symlink-loop"),
    pytest.param("policy.paths", "RuntimeError", _set("artifacts.0.path", "~no-such-user-for-baton/notes.md"),
                 id="path-names-an-unknown-user"),
    pytest.param("lineage", "ValueError", _stored_file(b'{"n": ' + b"1" * 5000 + b"}"),
                 id="store-file-with-too-many-digits"),
    pytest.param("lineage", "RecursionError", _stored_file(b"[" * 100_000 + b"]" * 100_000),
                 id="store-file-nested-too-deep"),
    pytest.param("artifacts", "PermissionError", _unsearchable_artifact_dir, id="artifact-in-an-unsearchable-dir",
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root searches any directory")),
]


@pytest.mark.parametrize(("check", "error", "mutate"), STOPPED)
def test_a_check_the_project_stops_from_running_fails(check: str, error: str, mutate: Mutation, project: Path,
                                                      data: dict, config) -> None:
    mutate(data, project)
    report = validate_record(data, project, config)
    assert report.check(check).status == "fail"
    assert f"could not run ({error})" in report.check(check).detail
    assert report.status == "fail"


def test_a_bug_in_a_check_surfaces_as_a_bug(project: Path, data: dict, config,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what a real project can make a check raise is turned into that check's failure."""
    from baton_engine.handoff import validate

    def broken(_record: HandoffRecord) -> None:
        raise KeyError("a check's own bug")

    monkeypatch.setattr(validate, "_check_actionability", broken)
    with pytest.raises(KeyError):
        validate_record(data, project, config)
