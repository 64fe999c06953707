"""Secrets through the CLI: every corpus format, planted in every capture field of ``baton checkpoint
create`` and in a recorded decision, is redacted before it reaches ``.baton/`` or a log line, and each
redaction is recorded (field + reason) in the command's answer and in the stored record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.handoff.store import HandoffStore, find_project_root
from batontest.engine_kit import LogSink
from batontest.hermes_home import initialised_project
from batontest.secrets_check import leaks_in_store, leaks_in_text
from batontest.secrets_corpus import SAMPLES, SecretSample, leaky_document


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one commit and an initialised ``.baton/`` (what ``baton init`` makes; the folder's
    ``project`` is a git repository without it)."""
    return initialised_project(tmp_path / "proj")


def run(project: Path, *argv: str, stdin: str | None = None) -> dict:
    result = CliRunner().invoke(cli, [*argv, "--root", str(project), "--json"], input=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_each_secret_format_is_redacted_in_a_checkpoint_and_a_decision(
    project: Path, sample: SecretSample, debug_logs: LogSink
) -> None:
    payload = {"title": "Deploy fix", "objective": f"Ship it. {sample.text}",
               "summary": {"current_state": f"Ran the deploy:\n{sample.text}\n", "completed": [sample.text]},
               "constraints": [sample.text]}
    payload_file = project.parent / "payload.json"
    payload_file.write_text(json.dumps(payload))
    created = run(project, "checkpoint", "create", "--input", str(payload_file))
    ref = created["handoff"]["short_id"]
    recorded = run(project, "record", "decision", ref, "--input", "-",
                   stdin=json.dumps({"decision": "rotate the key", "rationale": sample.text}))
    for answer in (created, recorded):
        assert answer["redactions"], f"{sample.name}: no redaction recorded"
        assert all(r["field"] and r["reason"] for r in answer["redactions"])
        assert not leaks_in_text(json.dumps(answer), sample.secrets)
    fields = {r["field"] for r in created["redactions"]}
    assert {"work.objective", "summary.current_state"} <= {f.split("[")[0] for f in fields}, fields
    stored = HandoffStore(find_project_root(project)).load(ref)
    assert len(stored.redactions) >= len(created["redactions"]) + len(recorded["redactions"])
    assert leaks_in_store(project, sample.secrets) == []
    assert leaks_in_text(debug_logs.text, sample.secrets) == []
    for kept in sample.keep:
        assert kept in stored.work.objective + stored.summary.current_state, f"{sample.name}: lost {kept!r}"


def test_a_paste_of_every_format_at_once_leaves_no_secret_anywhere(project: Path, debug_logs: LogSink) -> None:
    document = leaky_document()
    created = run(project, "checkpoint", "create", "--title", "Paste", "--objective", document,
                  "--state", document, "--decision", document, "--next", document, "--risk", document)
    assert created["redactions"]
    run(project, "resume", created["handoff"]["short_id"])
    assert leaks_in_store(project) == []
    assert leaks_in_text(debug_logs.text) == []
