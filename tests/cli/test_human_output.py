"""Without --json: rich text for people, errors on stderr, the same exit codes as the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FAKE_OPENAI_KEY = "sk-proj-" + "FAKEbaton" + "0123456789abcdefghijKLMNOP"


@pytest.fixture
def project(baton, git_project: Path) -> Path:
    assert baton("init", cwd=git_project).code == 0
    return git_project


def draft(baton, root: Path, *extra: str) -> str:
    result = baton("checkpoint", "create", "--json", "--title", "Fix [login]", "--objective", "Users can log in",
                   "--state", "patched", "--artifact", "src/app.py", *extra, cwd=root)
    return result.data["handoff"]["short_id"]


def test_project_commands_print_readable_text(baton, project: Path) -> None:
    short = draft(baton, project, "--next", f"rotate {FAKE_OPENAI_KEY}")
    status = baton("status", cwd=project)
    assert status.code == 0 and "draft: 1" in status.stdout and "Fix [login]" in status.stdout
    detect = baton("detect", "--event", '{"explicit": true}', cwd=project)
    assert detect.code == 0 and "recommend a handoff" in detect.stdout and "inputs unused" in detect.stdout
    doctor = baton("doctor", cwd=project)
    assert doctor.code == 0 and "python" in doctor.stdout and "project" in doctor.stdout
    audit = baton("audit", cwd=project)
    assert audit.code == 0 and "open_items[0].suggested_action" in audit.stdout
    assert FAKE_OPENAI_KEY not in audit.stdout
    gc = baton("gc", "--dry-run", cwd=project)
    assert gc.code == 0 and "would remove: .baton/cache" in gc.stdout
    listing = baton("handoff", "list", cwd=project)
    assert short in listing.stdout and "Fix [login]" in listing.stdout  # brackets are text, not markup


def test_handoff_commands_print_readable_text(baton, project: Path) -> None:
    short = draft(baton, project)
    recorded = baton("record", "open-item", short, "--description", "add a test", "--action", "write it",
                     "--acceptance", "pytest passes", cwd=project)
    assert recorded.code == 0 and f"recorded O-001 in {short}" in recorded.stdout
    validated = baton("handoff", "validate", short, cwd=project)
    assert validated.code == 0 and "validation: pass" in validated.stdout and "actionability" in validated.stdout
    assert baton("handoff", "ready", short, cwd=project).code == 0
    shown = baton("handoff", "show", short, "--format", "md", cwd=project)
    assert shown.code == 0 and "Fix [login]" in shown.stdout
    as_json = baton("handoff", "show", short, cwd=project)
    assert json.loads(as_json.stdout)["id"].replace("-", "").endswith(short)
    forked = baton("fork", short, "--label", "alt", cwd=project)
    assert forked.code == 0 and "forked" in forked.stdout
    resumed = baton("resume", cwd=project)
    assert resumed.code == 0 and resumed.stdout.startswith("# Resume brief: Fix [login]")


def test_errors_go_to_stderr_with_the_same_exit_codes(baton, project: Path, git_project: Path) -> None:
    short = draft(baton, project)
    (project / "src" / "app.py").unlink()
    failed = baton("handoff", "validate", short, cwd=project)
    assert failed.code == 3 and failed.stdout == ""
    assert "validation_failed" in failed.stderr and "artifacts" in failed.stderr
    missing = baton("handoff", "show", "abcdef12", cwd=project)
    assert missing.code == 4 and "no handoff matches" in missing.stderr
    bad = baton("checkpoint", "create", "--title", "T", cwd=project)
    assert bad.code == 2 and "--objective" in bad.stderr


def test_migrate_and_init_panels(baton, git_project: Path) -> None:
    (git_project / ".threadline" / "handoffs").mkdir(parents=True)
    refused = baton("init", cwd=git_project)
    assert refused.code == 4 and "--migrate-legacy" in refused.stderr
    dry = baton("migrate", "--dry-run", cwd=git_project)
    assert dry.code == 0 and "dry_run: True" in dry.stdout
    moved = baton("init", "--migrate-legacy", cwd=git_project)
    assert moved.code == 0 and (git_project / ".baton" / "handoffs").is_dir()


def test_the_init_panel_wraps_long_lines_and_leaves_out_empty_fields(baton, git_project: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: the panel cut `created: [...]` at its edge and printed `migrated: None`."""
    monkeypatch.setenv("COLUMNS", "50")
    done = baton("init", cwd=git_project)
    assert done.code == 0 and "None" not in done.stdout
    text = "".join(line.strip("│ ").strip() for line in done.stdout.splitlines())
    for path in (".baton/handoffs", ".baton/cache", ".baton/config.json", ".baton/.gitignore"):
        assert path in text, done.stdout
