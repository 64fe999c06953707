"""Commands are never re-run, except allowlisted rechecks: real processes, no shell, digest only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from baton_engine.handoff.validate import run_recheck, validate_record


@dataclass
class Policy:
    allowed_roots: list[str] = field(default_factory=list)
    recheck_allowlist: list[str] = field(default_factory=list)
    max_field_chars: int = 20000


@dataclass
class Config:
    """Any object with the documented attributes works (not only config.BatonConfig)."""

    policy: Policy = field(default_factory=Policy)


def test_no_recheck_runs_nothing(project: Path, data: dict) -> None:
    calls: list[str] = []
    report = validate_record(data, project, Config(Policy(recheck_allowlist=["git status"])),
                             runner=lambda c, r: calls.append(c))  # type: ignore[arg-type,return-value]
    assert calls == [] and report.rechecks == ()
    assert "not re-run" in report.check("evidence").detail


@pytest.mark.parametrize("asked", ["rm -rf src", "git status; rm -rf src", "git  status --porcelain", "pytest -x"])
def test_command_off_the_allowlist_is_refused_and_not_run(asked: str, project: Path, data: dict, config) -> None:
    calls: list[str] = []
    report = validate_record(data, project, config, recheck=[asked],
                             runner=lambda c, r: calls.append(c))  # type: ignore[arg-type,return-value]
    assert calls == []
    assert report.check("evidence").status == "fail" and "not on policy.recheck_allowlist" in \
        report.check("evidence").detail
    assert report.rejected_rechecks == (" ".join(asked.split()),)
    assert report.policy_blocked and report.status == "fail"
    assert (project / "src" / "app.py").exists()


def test_allowlisted_command_runs_for_real_after_whitespace_normalisation(project: Path, data: dict, config) -> None:
    report = validate_record(data, project, config, recheck=["  git   status  "])
    evidence = report.check("evidence")
    assert evidence.status == "pass", evidence.detail
    (outcome,) = report.rechecks
    assert outcome["command"] == "git status" and outcome["exit_code"] == 0
    assert outcome["digest"].startswith("sha256:") and len(outcome["digest"]) == 71
    assert "On branch" not in str(report.checks)  # output is digested, never stored


def test_failing_allowlisted_command_fails_evidence(project: Path, data: dict) -> None:
    config = Config(Policy(recheck_allowlist=["git rev-parse --verify no-such-ref"]))
    report = validate_record(data, project, config, recheck=["git rev-parse --verify no-such-ref"])
    assert report.check("evidence").status == "fail"
    assert "exited" in report.check("evidence").detail and not report.policy_blocked


def test_recheck_digest_compared_with_recorded_evidence(project: Path, data: dict) -> None:
    config = Config(Policy(recheck_allowlist=["git rev-parse HEAD"]))
    data["evidence"].append({"id": "E-002", "type": "command", "claim": "head", "ref": "git rev-parse HEAD",
                             "captured_at": "2026-11-30T02:00:00Z", "result": "ok", "digest": "sha256:" + "0" * 64})
    warned = validate_record(data, project, config, recheck=["git rev-parse HEAD"])
    assert warned.check("evidence").status == "warn" and "E-002" in warned.check("evidence").detail
    data["evidence"][1]["digest"] = warned.rechecks[0]["digest"]
    matched = validate_record(data, project, config, recheck=["git rev-parse HEAD"])
    assert matched.check("evidence").status == "pass"
    assert matched.rechecks[0]["evidence_ids"] == ["E-002"]


def test_no_shell_means_redirection_is_just_an_argument(project: Path) -> None:
    outcome = run_recheck("echo hi > created.txt", project)
    assert outcome.exit_code == 0 and outcome.problem is None
    assert not (project / "created.txt").exists()


def test_runs_inside_the_root(project: Path) -> None:
    import hashlib

    outcome = run_recheck("pwd", project)
    expected = "sha256:" + hashlib.sha256((str(project) + "\n").encode()).hexdigest()
    assert outcome.digest == expected


def test_timeout_and_missing_program_are_reported(project: Path) -> None:
    slow = run_recheck("sleep 5", project, timeout=0.3)
    assert slow.exit_code is None and "timed out" in (slow.problem or "")
    missing = run_recheck("no-such-program-baton --x", project)
    assert missing.exit_code is None and "could not start" in (missing.problem or "")
    unparsable = run_recheck("echo 'unterminated", project)
    assert unparsable.problem == "cannot be parsed into arguments"
