"""The spec's acceptance journeys, driven through the installed `baton` command in real processes.

This module's ``baton`` runs the installed console script as a real process (the folder's runs the click command
in-process) and its ``project`` is a fresh git project where ``baton init`` was never run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from batontest import schemas
from batontest.baton_cli import CliResult, run_baton
from batontest.gitrepo import commit_file, init_repo
from batontest.records import handoff_files
from batontest.secrets_corpus import SAMPLES_BY_NAME


@pytest.fixture
def baton() -> Callable[..., CliResult]:
    """Run the installed console script in ``cwd`` (no tokenizer env: the project config decides)."""
    return run_baton


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = init_repo(tmp_path / "shop")
    commit_file(root, "src/cart.py", "def total(items):\n    return sum(items)\n", "initial")
    commit_file(root, "README.md", "# shop\n", "readme")
    yield root


@pytest.fixture
def commit() -> Callable[[Path, str, str], str]:
    """Commit ``text`` to ``name`` in a repository; returns the new head."""
    return commit_file


@pytest.fixture
def assert_store_conforms() -> Callable[[Path], int]:
    """Every record file under ``.baton/handoffs`` validates against the published schema; returns the count."""

    def check(root: Path) -> int:
        files = handoff_files(root)
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            errors = schemas.conformance_errors(data)
            assert not errors, (path.name, errors)
        return len(files)

    return check


# Corpus samples pasted into a capture payload; each must vanish from every byte written under .baton/.
SECRET_SAMPLES = ("openai_project", "github_classic_pat", "aws_secret_access_key", "pem_rsa_private_key",
                  "url_password", "bearer_header")


def write_payload(tmp_path: Path, payload: dict) -> str:
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def cart_payload(**extra: object) -> dict:
    return {
        "title": "Cart totals include tax",
        "objective": "Cart.total returns the taxed amount",
        "constraints": ["keep the public API"],
        "summary": {"current_state": "tax table added, total() not yet using it",
                    "completed": ["added tax table"]},
        "artifacts": [{"path": "src/cart.py", "role": "modified", "description": "total()"}],
        "decisions": [{"decision": "tax rates live in a table, not code", "rationale": "yearly changes"}],
        "open_items": [{"description": "apply tax in total()", "priority": "high",
                        "suggested_action": "multiply by the rate in total()",
                        "acceptance_check": "pytest tests/test_cart.py passes"}],
        "failed_attempts": [{"attempt": "rounding per item", "outcome": "totals off by a cent"}],
        **extra,
    }


def ready_handoff(baton, project: Path, tmp_path: Path, **extra: object) -> str:
    created = baton("checkpoint", "create", "--json", "--input", write_payload(tmp_path, cart_payload(**extra)),
                    cwd=project)
    assert created.code == 0, created.stderr
    short = created.data["handoff"]["short_id"]
    ready = baton("handoff", "ready", short, "--json", cwd=project)
    assert ready.code == 0, ready.stdout + ready.stderr
    return short


def test_fresh_project_init_checkpoint_validate_ready_resume(baton, project: Path, tmp_path: Path,
                                                            assert_store_conforms) -> None:
    init = baton("init", cwd=project)
    assert init.code == 0 and ".baton/config.json" in init.stdout
    created = baton("checkpoint", "create", "--json", "--input", write_payload(tmp_path, cart_payload()),
                    cwd=project / "src")  # any directory inside the project
    assert created.code == 0, created.stderr
    short = created.data["handoff"]["short_id"]
    validated = baton("handoff", "validate", short, cwd=project)
    assert validated.code == 0 and "validation: pass" in validated.stdout
    assert baton("handoff", "ready", short, "--json", cwd=project).data["handoff"]["status"] == "ready"

    brief = baton("resume", cwd=project)
    assert brief.code == 0
    text = brief.stdout
    assert text.startswith("# Resume brief: Cart totals include tax")
    assert "multiply by the rate in total()" in text and "rounding per item" in text
    assert "STALE" not in text
    assert text.index("First next action") < text.index("Verify freshness")

    listing = baton("handoff", "list", cwd=project)
    assert short in listing.stdout and "ready" in listing.stdout
    assert baton("gc", "--json", cwd=project).code == 0  # index/cache gone: records still the truth
    again = baton("resume", "--json", cwd=project)
    assert again.code == 0 and again.data["brief"]["text"].rstrip("\n") == text.rstrip("\n")
    assert assert_store_conforms(project) == 1


def test_resume_is_stale_after_a_commit_changes_a_recorded_artifact(baton, project: Path, tmp_path: Path,
                                                                    commit, assert_store_conforms) -> None:
    baton("init", cwd=project)
    short = ready_handoff(baton, project, tmp_path)
    captured = baton("handoff", "show", short, "--json", cwd=project).data["content"]["project"]["repository"]
    new_head = commit(project, "src/cart.py", "def total(items):\n    return sum(items) * 1.2\n")

    resumed = baton("resume", short, "--json", cwd=project)
    assert resumed.code == 0
    fresh = resumed.data["freshness"]
    assert fresh["stale"] is True
    assert (fresh["git_head_at_capture"], fresh["git_head_now"]) == (captured["head"], new_head)
    assert captured["head"] != new_head
    assert [d["path"] for d in fresh["drifted_artifacts"]] == ["src/cart.py"]
    text = resumed.data["brief"]["text"]
    assert "STALE" in text
    assert text.index("STALE") < text.index("First next action")

    prompt = baton("resume", short, cwd=project)
    assert prompt.stdout.index("STALE") < prompt.stdout.index("multiply by the rate")
    assert assert_store_conforms(project) == 1


def test_fork_and_merge_needs_a_resolution(baton, project: Path, tmp_path: Path, assert_store_conforms) -> None:
    baton("init", cwd=project)
    parent = ready_handoff(baton, project, tmp_path)
    parent_file = next((project / ".baton" / "handoffs").glob(f"*--{parent}.json"))
    parent_bytes = parent_file.read_bytes()

    left = baton("fork", parent, "--json", "--label", "flat-rate", cwd=project).data["handoff"]
    right = baton("fork", parent, "--json", "--label", "per-region", cwd=project).data["handoff"]
    assert left["relation"] == right["relation"] == "fork"
    assert left["status"] == right["status"] == "draft"
    assert baton("record", "decision", left["short_id"], "--json", "--text", "one flat tax rate",
                 cwd=project).data["item"]["id"] == "D-002"
    assert baton("record", "decision", right["short_id"], "--json", "--text", "a rate per region",
                 cwd=project).data["item"]["id"] == "D-002"

    refused = baton("merge", left["short_id"], right["short_id"], "--json", cwd=project)
    assert refused.code == 4 and refused.data["error"]["kind"] == "conflict"
    assert "D-002" in refused.data["error"]["message"]
    human = baton("merge", left["short_id"], right["short_id"], cwd=project)
    assert human.code == 4 and "resolution" in human.stderr

    merged = baton("merge", left["short_id"], right["short_id"], "--json",
                   "--resolution", "per-region rates; flat rate only as the default region", cwd=project)
    assert merged.code == 0, merged.stdout
    child = baton("handoff", "show", merged.data["handoff"]["short_id"], "--json", cwd=project).data["content"]
    assert child["lineage"]["relation"] == "merge"
    assert sorted(child["lineage"]["parents"]) == sorted([left["id"], right["id"]])
    assert child["decisions"][-1]["decision"].startswith("per-region rates")
    assert parent_file.read_bytes() == parent_bytes  # forks never touch the ready parent
    assert assert_store_conforms(project) == 4


def test_secret_in_capture_payload_is_redacted_recorded_and_never_persisted(
    baton, project: Path, tmp_path: Path, assert_store_conforms
) -> None:
    baton("init", cwd=project)
    samples = [SAMPLES_BY_NAME[name] for name in SECRET_SAMPLES]
    payload = cart_payload(
        risks=[{"description": sample.text, "severity": "high"} for sample in samples],
        evidence=[{"type": "command", "claim": "deploy log reviewed", "ref": "deploy.sh",
                   "output": "\n".join(sample.text for sample in samples)}],
    )
    created = baton("checkpoint", "create", "--json", "--input", write_payload(tmp_path, payload), cwd=project)
    assert created.code == 0, created.stderr
    fields = {item["field"] for item in created.data["redactions"]}
    assert {f"risks[{i}].description" for i in range(len(samples))} <= fields
    assert "evidence[0].result" in fields
    short = created.data["handoff"]["short_id"]
    assert baton("handoff", "ready", short, "--json", cwd=project).code == 0
    outputs = [created.stdout, baton("resume", "--json", cwd=project).stdout,
               baton("audit", "--json", cwd=project).stdout,
               baton("handoff", "show", short, "--format", "md", cwd=project).stdout]

    stored = [path.read_bytes() for path in (project / ".baton").rglob("*") if path.is_file()]
    assert stored
    for sample in samples:
        for secret in sample.secrets:
            assert all(secret.encode() not in blob for blob in stored), sample.name
            assert all(secret not in out for out in outputs), sample.name
    audit = baton("audit", "--json", cwd=project).data
    assert {item["field"] for item in audit["redactions"]} == fields
    assert assert_store_conforms(project) == 1


def test_errors_through_the_real_process(baton, project: Path) -> None:
    missing = baton("status", cwd=project)
    assert missing.code == 4 and "baton init" in missing.stderr
    baton("init", cwd=project)
    bad = baton("checkpoint", "create", "--title", "only a title", cwd=project)
    assert bad.code == 2 and "--objective" in bad.stderr
    usage = baton("handoff", "show", cwd=project)
    assert usage.code == 2  # click usage error: missing REF
