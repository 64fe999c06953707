"""Freshness against real git repositories and plain directories."""

from __future__ import annotations

from pathlib import Path

from baton_engine.handoff.freshness import ArtifactDrift, check_freshness
from baton_engine.handoff.model import Freshness


def test_unchanged_repository_is_fresh(project: Path, data: dict) -> None:
    report = check_freshness(data, project)
    assert not report.stale and report.reasons == () and report.drifted_artifacts == ()
    assert report.git_head_at_capture == report.git_head_now is not None
    assert report.checked_artifacts == 1


def test_new_commit_makes_it_stale(project: Path, data: dict, helpers) -> None:
    before = data["project"]["repository"]["head"]
    (project / "README.md").write_text("# demo\nmore\n")
    after = helpers.commit_all(project, "second")
    report = check_freshness(data, project)
    assert report.stale
    assert report.git_head_at_capture == before and report.git_head_now == after
    assert report.reasons == (f"git head moved from {before[:12]} to {after[:12]} since capture",)
    assert report.drifted_artifacts == ()


def test_changed_artifact_committed_is_stale_for_both_reasons(project: Path, data: dict, helpers) -> None:
    (project / "src" / "app.py").write_text("print('hi, you')\n")
    helpers.commit_all(project, "change app")
    report = check_freshness(data, project)
    assert report.stale
    assert report.drifted_artifacts == (ArtifactDrift("src/app.py", "changed"),)
    assert len(report.reasons) == 2


def test_uncommitted_edit_and_deletion(project: Path, data: dict) -> None:
    data["artifacts"].append({**data["artifacts"][0], "path": "README.md",
                              "content_hash": data["artifacts"][0]["content_hash"]})
    (project / "src" / "app.py").unlink()
    report = check_freshness(data, project)
    assert report.stale
    assert set(report.drifted_artifacts) == {ArtifactDrift("src/app.py", "missing"),
                                             ArtifactDrift("README.md", "changed")}


def test_declared_deleted_artifact_is_not_drift(project: Path, data: dict) -> None:
    data["artifacts"][0]["description"] = "removed in this change"
    (project / "src" / "app.py").unlink()
    assert not check_freshness(data, project).stale


def test_out_of_root_artifacts_are_never_hashed(project: Path, data: dict) -> None:
    data["artifacts"][0]["path"] = "/etc/hostname"
    report = check_freshness(data, project)
    assert report.checked_artifacts == 0 and not report.stale


def test_non_git_directory_checks_artifacts_only(tmp_path: Path, helpers) -> None:
    root = helpers.make_project(tmp_path / "plain", use_git=False)
    data = helpers.record_data(root)
    fresh = check_freshness(data, root)
    assert fresh.git_head_at_capture is None and fresh.git_head_now is None and not fresh.stale
    (root / "src" / "app.py").write_text("print('x')\n")
    stale = check_freshness(data, root)
    assert stale.stale and stale.drifted_artifacts == (ArtifactDrift("src/app.py", "changed"),)


def test_repository_gone_is_stale(project: Path, data: dict) -> None:
    import shutil

    shutil.rmtree(project / ".git")
    report = check_freshness(data, project)
    assert report.stale and report.git_head_now is None
    assert "not a git repository" in report.reasons[0]


def test_first_commit_after_capture_is_stale(tmp_path: Path, helpers) -> None:
    root = helpers.make_project(tmp_path / "empty", use_git=False)
    helpers.git(root, "init", "-q", "-b", "main")
    data = helpers.record_data(root)
    data["project"]["repository"] = {"vcs": "git", "remote_hint": None, "head": None, "dirty": True}
    assert not check_freshness(data, root).stale
    helpers.commit_all(root, "first")
    assert check_freshness(data, root).stale


def test_to_model(project: Path, data: dict, helpers) -> None:
    (project / "src" / "app.py").write_text("print('y')\n")
    model = check_freshness(data, project).to_model()
    assert isinstance(model, Freshness) and model.stale
    assert model.model_dump(mode="json")["drifted_artifacts"] == [{"path": "src/app.py", "reason": "changed"}]
