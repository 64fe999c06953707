"""The whole path on a real git project: capture -> validate -> detector readiness -> freshness -> brief."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from baton_engine.handoff.capture import build_draft
from baton_engine.handoff.config import BatonConfig
from baton_engine.handoff.detector import DetectorSignals, evaluate, readiness
from baton_engine.handoff.freshness import check_freshness
from baton_engine.handoff.redact import find_secrets
from baton_engine.handoff.render import render_brief, render_markdown
from baton_engine.handoff.validate import validate_record
from batontest.gitrepo import git
from batontest.secrets_corpus import SAMPLES_BY_NAME

NOW = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def test_captured_record_goes_stale_after_a_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "app.py").write_text("print('v1')\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "v1")
    secret = SAMPLES_BY_NAME["openai_project"]
    payload = {
        "work": {"title": "Ship v2", "objective": "Print v2 instead of v1.", "constraints": [secret.text]},
        "summary": {"current_state": "app.py still prints v1."},
        "artifacts": [{"path": "app.py", "role": "modified"}],
        "open_items": [{"priority": "high", "description": "Change the message.",
                        "suggested_action": "Edit app.py to print v2.", "acceptance_check": "python app.py"}],
    }
    record, redactions = build_draft(payload, tmp_path, now=NOW)
    assert redactions
    ready = readiness(record)
    assert ready is not None and ready < BatonConfig().detector.auto_prepare_min_readiness  # not validated yet
    detected = evaluate(DetectorSignals(explicit=True), BatonConfig().detector, now=NOW, readiness=ready)
    assert detected.recommend and not detected.auto_prepare
    validation = validate_record(record, tmp_path, BatonConfig())
    assert validation.status in ("pass", "warn")
    validated = evaluate(DetectorSignals(explicit=True), BatonConfig().detector, now=NOW,
                         readiness=readiness(record, validation))
    assert validated.auto_prepare and validated.readiness is not None and validated.readiness >= 0.8

    fresh = render_brief(record, freshness=check_freshness(record, tmp_path))
    assert "## STALE" not in fresh.text and "Checked at render time: git head" in fresh.text

    (tmp_path / "app.py").write_text("print('v2')\n")
    git(tmp_path, "commit", "-q", "-am", "v2")
    report = check_freshness(record, tmp_path)
    assert report.stale
    brief = render_brief(record, freshness=report, max_tokens=400)
    text = brief.text
    assert text.index("## STALE") < text.index("## First next action")
    for reason in report.reasons:
        assert f"- {reason}" in text
    assert "artifact app.py changed since capture" in text
    assert text.rstrip().split("\n\n")[-1].startswith("## Verify freshness\nSTALE: git head ")
    for rendered in (text, render_markdown(record)):
        assert not find_secrets(rendered)
        assert all(value not in rendered for value in secret.secrets)
