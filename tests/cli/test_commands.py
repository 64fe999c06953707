"""The `baton` JSON contract: every command's ``--json`` output (snapshotted) and exit code, on a real git project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from baton_engine.operations.handoffs import SHOW_FORMATS

FAKE_OPENAI_KEY = "sk-proj-" + "FAKEbaton" + "0123456789abcdefghijKLMNOP"


def create(baton, root: Path, *extra: str) -> dict[str, Any]:
    result = baton("checkpoint", "create", "--json", "--title", "Fix login", "--objective", "Users can log in",
                   "--state", "handler patched, tests pending", "--artifact", "src/app.py",
                   "--constraint", "no new dependencies", *extra, cwd=root)
    assert result.code == 0, result.stdout + result.stderr
    return result.data


@pytest.fixture
def project(baton, git_project: Path) -> Path:
    assert baton("init", "--json", cwd=git_project).code == 0
    return git_project


@pytest.fixture
def actionable(baton, project: Path) -> str:
    """A draft whose open item has a suggested action and an acceptance check: validates with no warning."""
    short = create(baton, project)["handoff"]["short_id"]
    done = baton("record", "open-item", short, "--json", "--description", "cover login with a test",
                 "--priority", "high", "--action", "write tests/test_login.py",
                 "--acceptance", "pytest tests/test_login.py passes", cwd=project)
    assert done.code == 0, done.stdout
    return short


def test_init_then_status(baton, git_project: Path, snapshot) -> None:
    first = baton("init", "--json", cwd=git_project)
    assert first.code == 0
    snapshot("init.json", first.stdout, git_project)
    assert (git_project / ".baton" / "config.json").is_file()
    again = baton("init", "--json", cwd=git_project)
    assert again.code == 0 and again.data["created"] == []
    status = baton("status", "--json", cwd=git_project / "src")  # found by walking up
    assert status.code == 0
    snapshot("status-empty.json", status.stdout, git_project)


def test_missing_project_is_not_found_with_advice(baton, git_project: Path) -> None:
    for args in (["status"], ["handoff", "list"], ["resume"], ["audit"], ["gc"]):
        result = baton(*args, "--json", cwd=git_project)
        assert result.code == 4, args
        assert result.data["ok"] is False
        assert result.data["error"]["kind"] == "not_found"
        assert "baton init" in result.data["error"]["message"]


def test_checkpoint_create_from_flags(baton, project: Path, snapshot, assert_conforms) -> None:
    result = baton("checkpoint", "create", "--json", "--title", "Fix login", "--objective", "Users can log in",
                   "--state", "handler patched", "--next", "write the test", "--completed", "patched handler",
                   "--decision", "keep server sessions", "--artifact", "src/app.py", "--risk", "token expiry",
                   cwd=project)
    assert result.code == 0
    snapshot("checkpoint-create.json", result.stdout, project)
    written = json.loads((project / result.data["path"]).read_text(encoding="utf-8"))
    assert_conforms(written)
    assert written["open_items"][0]["suggested_action"] == "write the test"


def test_checkpoint_create_from_input_file_with_flag_override(baton, project: Path, tmp_path: Path) -> None:
    payload = {"title": "From file", "objective": "O", "summary": {"current_state": "file state"},
               "decisions": [{"decision": "use the file"}]}
    source = tmp_path / "payload.json"
    source.write_text(json.dumps(payload), encoding="utf-8")
    result = baton("checkpoint", "create", "--json", "--input", str(source), "--state", "flag state", cwd=project)
    assert result.code == 0
    shown = baton("handoff", "show", result.data["handoff"]["short_id"], "--json", cwd=project).data["content"]
    assert shown["work"]["title"] == "From file"
    assert shown["summary"]["current_state"] == "flag state"
    assert shown["decisions"][0]["id"] == "D-001"


def test_checkpoint_create_from_stdin(baton, project: Path) -> None:
    payload = json.dumps({"title": "T", "objective": "O", "state": "S"})
    result = baton("checkpoint", "create", "--json", "--input", "-", cwd=project, stdin=payload)
    assert result.code == 0 and result.data["handoff"]["title"] == "T"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--objective", "O", "--state", "S"], "work.title (flag --title)"),
        (["--title", "T", "--objective", "O"], "summary.current_state (flag --state)"),
    ],
)
def test_checkpoint_create_input_errors_exit_2(baton, project: Path, args: list[str], needle: str) -> None:
    result = baton("checkpoint", "create", "--json", *args, cwd=project)
    assert result.code == 2
    assert result.data["error"]["kind"] == "input_error"
    assert needle in result.data["error"]["message"]


def test_checkpoint_create_malformed_input_file_exit_2(baton, project: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    result = baton("checkpoint", "create", "--json", "--input", str(bad), cwd=project)
    assert result.code == 2
    assert "malformed JSON at line 1" in result.data["error"]["message"]
    missing = baton("checkpoint", "create", "--json", "--input", str(tmp_path / "nope.json"), cwd=project)
    assert missing.code == 2 and "cannot read" in missing.data["error"]["message"]


def test_checkpoint_create_redacts_and_reports(baton, project: Path, snapshot) -> None:
    result = create(baton, project, "--next", f"rotate {FAKE_OPENAI_KEY}")
    snapshot("checkpoint-create-redacted.json", json.dumps(result, indent=2), project)
    assert [r["field"] for r in result["redactions"]] == ["open_items[0].description",
                                                          "open_items[0].suggested_action"]
    for path in (project / ".baton").rglob("*"):
        if path.is_file():
            assert FAKE_OPENAI_KEY.encode() not in path.read_bytes()


def test_record_every_kind(baton, project: Path, snapshot, tmp_path: Path) -> None:
    short = create(baton, project)["handoff"]["short_id"]
    output = tmp_path / "pytest.out"
    output.write_text("collected 3 items\n3 passed\n", encoding="utf-8")
    steps = [
        ("decision", ["--text", "keep sessions", "--rationale", "simpler", "--alternative", "JWT"]),
        ("evidence", ["--type", "command", "--claim", "tests pass", "--ref", "pytest -q",
                      "--output-file", str(output)]),
        ("failed-attempt", ["--attempt", "bump flask", "--outcome", "breaks the session store"]),
        ("open-item", ["--description", "add test", "--action", "write it", "--priority", "high"]),
    ]
    for kind, args in steps:
        result = baton("record", kind, short, "--json", *args, cwd=project)
        assert result.code == 0, result.stdout
        snapshot(f"record-{kind}.json", result.stdout, project)
    evidence = baton("handoff", "show", short, "--json", cwd=project).data["content"]["evidence"][0]
    assert evidence["result"] == "collected 3 items\n3 passed\n"
    assert evidence["digest"].startswith("sha256:")


def test_record_errors(baton, project: Path, tmp_path: Path) -> None:
    short = create(baton, project)["handoff"]["short_id"]
    missing = baton("record", "decision", "ffffffff", "--json", "--text", "x", cwd=project)
    assert missing.code == 4 and missing.data["error"]["kind"] == "not_found"
    empty = baton("record", "decision", short, "--json", cwd=project)
    assert empty.code == 2 and "decision: decision" in empty.data["error"]["message"]
    item = tmp_path / "item.json"
    item.write_text(json.dumps({"attempt": "from a file"}), encoding="utf-8")
    from_file = baton("record", "failed-attempt", short, "--json", "--input", str(item), cwd=project)
    assert from_file.code == 0 and from_file.data["item"]["attempt"] == "from a file"


def test_validate_ready_and_immutability(baton, project: Path, actionable: str, snapshot) -> None:
    validated = baton("handoff", "validate", actionable, "--json", cwd=project)
    assert validated.code == 0, validated.stdout
    snapshot("handoff-validate.json", validated.stdout, project)
    assert [c["name"] for c in validated.data["validation"]["checks"]] == [
        "schema", "references", "policy.transcript", "policy.secrets", "policy.paths", "artifacts",
        "repository", "evidence", "actionability", "lineage"]
    ready = baton("handoff", "ready", actionable, "--json", cwd=project)
    assert ready.code == 0, ready.stdout
    snapshot("handoff-ready.json", ready.stdout, project)
    again = baton("handoff", "ready", actionable, "--json", cwd=project)
    assert again.code == 4 and again.data["error"]["kind"] == "conflict"
    changed = baton("record", "decision", actionable, "--json", "--text", "late change", cwd=project)
    assert changed.code == 4 and "immutable" in changed.data["error"]["message"]


def test_ready_with_warnings_needs_a_reason(baton, project: Path) -> None:
    short = create(baton, project, "--next", "write the test")["handoff"]["short_id"]  # no acceptance check
    refused = baton("handoff", "ready", short, "--json", cwd=project)
    assert refused.code == 3
    assert refused.data["validation"]["status"] == "warn"
    assert "--accept-warnings" in refused.data["error"]["message"]
    accepted = baton("handoff", "ready", short, "--json", "--accept-warnings", "test follows next session",
                     cwd=project)
    assert accepted.code == 0, accepted.stdout
    assert accepted.data["accepted_warnings"]["reason"] == "test follows next session"
    assert accepted.data["handoff"]["status"] == "ready"


def test_validation_failure_exit_3_and_policy_block_exit_5(baton, project: Path, tmp_path: Path) -> None:
    short = create(baton, project)["handoff"]["short_id"]
    (project / "src" / "app.py").unlink()  # recorded artifact gone, not declared deleted
    failed = baton("handoff", "validate", short, "--json", cwd=project)
    assert failed.code == 3 and failed.data["error"]["kind"] == "validation_failed"
    assert {c["name"]: c["status"] for c in failed.data["validation"]["checks"]}["artifacts"] == "fail"
    assert baton("handoff", "ready", short, "--json", cwd=project).code == 3
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x", encoding="utf-8")
    escaping = create(baton, project, "--artifact", "../elsewhere.txt")["handoff"]["short_id"]
    blocked = baton("handoff", "validate", escaping, "--json", cwd=project)
    assert blocked.code == 5 and blocked.data["error"]["kind"] == "policy_blocked"
    assert "policy.paths" in blocked.data["error"]["message"]


def test_recheck_outside_the_allowlist_is_a_policy_block(baton, project: Path, actionable: str) -> None:
    refused = baton("handoff", "validate", actionable, "--json", "--recheck", "rm -rf src", cwd=project)
    assert refused.code == 5
    assert refused.data["validation"]["rejected_rechecks"] == ["rm -rf src"]
    assert (project / "src" / "app.py").exists()
    allowed = baton("handoff", "validate", actionable, "--json", "--recheck", "git status", cwd=project)
    assert allowed.code == 0, allowed.stdout
    assert [r["command"] for r in allowed.data["validation"]["rechecks"]] == ["git status"]


def test_list_and_show_formats(baton, project: Path, actionable: str, snapshot) -> None:
    other = create(baton, project)["handoff"]["short_id"]
    assert baton("handoff", "ready", actionable, "--json", cwd=project).code == 0
    listed = baton("handoff", "list", "--json", cwd=project)
    assert listed.code == 0
    assert [h["short_id"] for h in listed.data["handoffs"]] == [actionable, other]
    snapshot("handoff-list.json", listed.stdout, project)
    ready_only = baton("handoff", "list", "--json", "--status", "ready", cwd=project).data["handoffs"]
    assert [h["short_id"] for h in ready_only] == [actionable]
    for fmt in SHOW_FORMATS:
        shown = baton("handoff", "show", actionable, "--json", "--format", fmt, cwd=project)
        assert shown.code == 0 and shown.data["format"] == fmt
        snapshot(f"handoff-show-{fmt}.json", shown.stdout, project)
    unknown = baton("handoff", "show", actionable, "--format", "xml", cwd=project)
    assert unknown.code == 2


def test_list_reports_corrupt_files_as_problems(baton, project: Path, actionable: str) -> None:
    (project / ".baton" / "handoffs" / "20260101T000000Z--deadbeef.json").write_text("{oops", encoding="utf-8")
    listed = baton("handoff", "list", "--json", cwd=project)
    assert listed.code == 0
    assert len(listed.data["handoffs"]) == 1
    assert [p["path"] for p in listed.data["problems"]] == [".baton/handoffs/20260101T000000Z--deadbeef.json"]


def test_resume_latest_ready_and_mark_resumed(baton, project: Path, actionable: str, snapshot) -> None:
    none_ready = baton("resume", "--json", cwd=project)
    assert none_ready.code == 4 and "no ready handoff" in none_ready.data["error"]["message"]
    assert baton("handoff", "ready", actionable, "--json", cwd=project).code == 0
    resumed = baton("resume", "--json", cwd=project)
    assert resumed.code == 0
    snapshot("resume.json", resumed.stdout, project)
    assert resumed.data["freshness"]["stale"] is False
    assert resumed.data["brief"]["tokens"] <= 1200
    as_json = baton("resume", "--format", "json", "--mark-resumed", cwd=project)
    assert as_json.code == 0
    data = json.loads(as_json.stdout)
    assert data["marked_resumed"] is True and data["record"]["id"] == data["handoff"]["id"]
    assert baton("handoff", "list", "--json", "--status", "resumed", cwd=project).data["handoffs"]
    small = baton("resume", actionable, "--json", "--max-tokens", "0", cwd=project)
    assert small.code == 2


def test_fork_and_merge(baton, project: Path, actionable: str, snapshot) -> None:
    assert baton("handoff", "ready", actionable, "--json", cwd=project).code == 0
    left = baton("fork", actionable, "--json", "--label", "try-jwt", cwd=project)
    assert left.code == 0
    snapshot("fork.json", left.stdout, project)
    right = baton("fork", actionable, "--json", "--label", "try-cookies", cwd=project)
    a, b = left.data["handoff"]["short_id"], right.data["handoff"]["short_id"]
    assert baton("record", "decision", a, "--json", "--text", "use JWT", cwd=project).code == 0
    assert baton("record", "decision", b, "--json", "--text", "use cookies", cwd=project).code == 0
    refused = baton("merge", a, b, "--json", cwd=project)
    assert refused.code == 4 and refused.data["error"]["kind"] == "conflict"
    merged = baton("merge", a, b, "--json", "--resolution", "JWT for the API, cookies for the web UI", cwd=project)
    assert merged.code == 0, merged.stdout
    snapshot("merge.json", merged.stdout, project)
    one = baton("merge", a, "--json", cwd=project)
    assert one.code == 2


def test_detect(baton, project: Path, snapshot) -> None:
    quiet = baton("detect", "--json", cwd=project)
    assert quiet.code == 0 and quiet.data["recommend"] is False
    snapshot("detect-none.json", quiet.stdout, project)
    explicit = baton("detect", "--json", "--event", '{"explicit": true}', cwd=project)
    assert explicit.code == 0 and explicit.data["recommend"] is True
    snapshot("detect-explicit.json", explicit.stdout, project)
    assert baton("handoff", "list", "--json", cwd=project).data["handoffs"] == []  # creates nothing
    full = '{"context_tokens": 100000, "context_window": 100000}'
    cooled = baton("detect", "--json", "--event", full, cwd=project).data  # within 20 min of the explicit one
    assert cooled["suppressed_by_cooldown"] is True and cooled["cooldown_remaining_seconds"] > 0
    assert baton("gc", "--json", cwd=project).code == 0  # forgets the cooldown state (rebuildable cache)
    fresh = baton("detect", "--json", "--event", full, cwd=project).data
    assert fresh["recommend"] is True and fresh["suppressed_by_cooldown"] is False
    assert fresh["inputs_used"] == {"context": 1.0}
    bad = baton("detect", "--json", "--event", '{"turns": "many"}', cwd=project)
    assert bad.code == 2 and "turns" in bad.data["error"]["message"]
    not_json = baton("detect", "--json", "--event", "{", cwd=project)
    assert not_json.code == 2


def test_doctor(baton, project: Path, git_project: Path, tmp_path: Path) -> None:
    healthy = baton("doctor", "--json", cwd=project)
    assert healthy.code == 0 and healthy.data["ok"] is True
    names = [c["name"] for c in healthy.data["checks"]]
    assert names[:6] == ["python", "git", "project", "config", "records", "tokenizer"]
    tokenizer = {c["name"]: c for c in healthy.data["checks"]}["tokenizer"]
    assert tokenizer["status"] == "warn" and tokenizer["detail"].startswith("estimate: rough runs")
    (project / ".baton" / "config.json").write_text('{"brief": {"max_tokens": "lots"}}', encoding="utf-8")
    broken = baton("doctor", "--json", cwd=project)
    assert broken.code == 3
    assert {c["name"]: c["status"] for c in broken.data["checks"]}["config"] == "fail"
    nowhere = tmp_path / "empty"
    nowhere.mkdir()
    assert baton("doctor", "--json", cwd=nowhere).code == 3


def test_gc_removes_the_temp_files_interrupted_writes_left_but_not_a_live_one(baton, project: Path,
                                                                             actionable: str) -> None:
    """A writer killed between write and rename leaves ``.<name>.<random>.tmp`` (store.atomic_write)."""
    import os
    import time

    handoffs = project / ".baton" / "handoffs"
    records = sorted(handoffs.glob("*.json"))
    stale, live = handoffs / f".{records[0].name}.abc123.tmp", project / ".baton" / ".config.json.def456.tmp"
    stale.write_bytes(b'{"half": ')
    live.write_bytes(b"{")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    dry = baton("gc", "--json", "--dry-run", cwd=project)
    temps = [path for path in dry.data["removed"] if path.endswith(".tmp")]
    assert temps == [f".baton/handoffs/{stale.name}"] and stale.exists()
    done = baton("gc", "--json", cwd=project)
    assert done.data["removed"] == dry.data["removed"]
    assert not stale.exists() and live.exists()  # a write in progress keeps its file
    assert sorted(handoffs.glob("*.json")) == records


def test_gc_deletes_only_rebuildable_files(baton, project: Path, actionable: str, snapshot) -> None:
    baton("detect", "--json", cwd=project)  # writes cache/detector.json
    (project / ".baton" / "index.sqlite").write_bytes(b"rebuildable")
    dry = baton("gc", "--json", "--dry-run", cwd=project)
    assert dry.code == 0 and (project / ".baton" / "index.sqlite").exists()
    done = baton("gc", "--json", cwd=project)
    snapshot("gc.json", done.stdout, project)
    assert sorted(done.data["removed"]) == [".baton/cache", ".baton/index.sqlite"]
    assert not (project / ".baton" / "cache").exists()
    assert len(list((project / ".baton" / "handoffs").glob("*.json"))) == 1
    assert (project / ".baton" / "config.json").exists()


def test_audit(baton, project: Path, snapshot) -> None:
    create(baton, project, "--next", f"rotate {FAKE_OPENAI_KEY}")
    audited = baton("audit", "--json", cwd=project)
    assert audited.code == 0
    snapshot("audit.json", audited.stdout, project)
    assert [r["field"] for r in audited.data["redactions"]] == ["open_items[0].description",
                                                                "open_items[0].suggested_action"]
    assert FAKE_OPENAI_KEY not in audited.stdout


def test_migrate_legacy_project(baton, git_project: Path, snapshot) -> None:
    assert baton("init", "--json", cwd=git_project).code == 0
    short = create(baton, git_project)["handoff"]["short_id"]
    (git_project / ".baton").rename(git_project / ".threadline")
    for path in (git_project / ".threadline" / "handoffs").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["$schema"] = "https://threadline.dev/schemas/handoff/v0.1.json"
        path.write_text(json.dumps(data), encoding="utf-8")
    status = baton("status", "--json", cwd=git_project)
    assert status.data["legacy"] is True
    dry = baton("migrate", "--json", "--dry-run", cwd=git_project)
    assert dry.code == 0 and (git_project / ".threadline").exists()
    snapshot("migrate-dry-run.json", dry.stdout, git_project)
    done = baton("migrate", "--json", cwd=git_project)
    assert done.code == 0 and (git_project / ".baton").exists()
    shown = baton("handoff", "show", short, "--json", cwd=git_project).data["content"]
    assert shown["$schema"] == "https://baton.dev/schemas/handoff/v0.1.json"
    again = baton("migrate", "--json", cwd=git_project)
    assert again.code == 4


def test_json_output_is_deterministic(baton, project: Path, actionable: str) -> None:
    assert baton("handoff", "ready", actionable, "--json", cwd=project).code == 0
    first = baton("resume", actionable, "--json", cwd=project).stdout
    second = baton("resume", actionable, "--json", cwd=project).stdout
    assert first == second


def test_detect_with_capture_creates_an_auditable_draft(baton, project: Path, tmp_path: Path) -> None:
    payload = tmp_path / "capture.json"
    payload.write_text(json.dumps({"title": "Auto", "objective": "O", "state": "S"}), encoding="utf-8")
    quiet = baton("detect", "--json", "--event", '{"turns": 2}', "--capture", str(payload), cwd=project)
    assert quiet.code == 0 and quiet.data["created"] is None
    explicit = baton("detect", "--json", "--event", '{"explicit": true}', "--capture", str(payload), cwd=project)
    assert explicit.code == 0 and explicit.data["created"]["title"] == "Auto"
    record = baton("handoff", "show", explicit.data["created"]["short_id"], "--json", cwd=project).data["content"]
    automation = record["automation"]
    assert automation["trigger"] == "manual" and automation["score"] == 1.0
    assert automation["inputs_used"] == {"explicit": 1.0} and "context" in automation["inputs_unused"]
    assert automation["reasons"] == explicit.data["reasons"]
    payload.write_text(json.dumps({"title": "no objective"}), encoding="utf-8")
    bad = baton("detect", "--json", "--event", '{"explicit": true}', "--capture", str(payload), cwd=project)
    assert bad.code == 2 and "objective" in bad.data["error"]["message"]


def test_resume_counts_with_the_configured_exact_tokenizer(baton, project: Path, actionable: str) -> None:
    from batontest.assets import qwen3_dir
    from tokenizers import Tokenizer

    tokenizer_dir = qwen3_dir()
    config_path = project / ".baton" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer"] = {"backend": "hf", "path": str(tokenizer_dir), "url": None, "model": None}
    config_path.write_text(json.dumps(config), encoding="utf-8")
    assert baton("handoff", "ready", actionable, "--json", cwd=project).code == 0
    resumed = baton("resume", "--json", cwd=project)
    assert resumed.code == 0, resumed.stdout
    brief = resumed.data["brief"]
    assert brief["counter_source"].startswith("hf:")
    reference = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    assert brief["tokens"] == len(reference.encode(brief["text"], add_special_tokens=False).ids)
    config["tokenizer"]["backend"] = "no-such-backend"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    broken = baton("resume", "--json", cwd=project)
    assert broken.code == 2 and "no-such-backend" in broken.data["error"]["message"]
