"""Repository facts against real git repositories (and a directory that is not one)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from baton_engine.handoff import gitinfo
from batontest.gitrepo import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_head_dirty_and_remote_in_a_real_repo(repo: Path) -> None:
    info = gitinfo.snapshot(repo).repository()
    assert info is not None
    assert info.vcs == "git"
    assert info.head == git(repo, "rev-parse", "HEAD")
    assert info.dirty is False
    assert info.remote_hint is None
    (repo / "a.txt").write_text("two\n")
    assert gitinfo.snapshot(repo).dirty is True


def test_store_directories_do_not_make_the_tree_dirty(repo: Path) -> None:
    (repo / ".baton" / "handoffs").mkdir(parents=True)
    (repo / ".baton" / "handoffs" / "x.json").write_text("{}")
    (repo / ".threadline").mkdir()
    (repo / ".threadline" / "y.json").write_text("{}")
    assert gitinfo.snapshot(repo).dirty is False
    (repo / "new.txt").write_text("untracked")
    assert gitinfo.snapshot(repo).dirty is True


def test_dirty_is_seen_from_a_subdirectory(repo: Path) -> None:
    sub = repo / "sub"
    sub.mkdir()
    (repo / "a.txt").write_text("changed\n")
    assert gitinfo.snapshot(sub).dirty is True


def test_remote_hint_has_credentials_stripped(repo: Path) -> None:
    git(repo, "remote", "add", "upstream", "https://bob:s3cr3t-token@example.com/o/r.git?token=abc#frag")
    assert gitinfo.remote_hint(repo) == "https://example.com/o/r.git"
    git(repo, "remote", "add", "origin", "git@example.com:o/r.git")
    assert gitinfo.remote_hint(repo) == "git@example.com:o/r.git"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:pw@host.example:8443/p.git", "https://host.example:8443/p.git"),
        ("ssh://git@host.example/p.git", "ssh://host.example/p.git"),
        ("https://host.example/p.git", "https://host.example/p.git"),
        ("https://[::1]:99/p", "https://[::1]:99/p"),
        ("https://h:notaport/p", "[unparseable remote]"),
    ],
)
def test_strip_credentials(url: str, expected: str) -> None:
    assert gitinfo.strip_credentials(url) == expected


def test_repo_without_commits_has_no_head(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    info = gitinfo.snapshot(tmp_path).repository()
    assert info is not None and info.head is None


def test_non_git_directory_gives_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".git").write_text("gitdir: /nonexistent\n")  # broken marker must not confuse us
    assert gitinfo.snapshot(plain).repository() is None
    assert gitinfo.snapshot(plain).head is None
    assert gitinfo.snapshot(plain) == gitinfo.OUTSIDE
    assert gitinfo.remote_hint(plain) is None


def test_missing_git_binary_degrades_to_none(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    assert gitinfo.snapshot(repo).repository() is None
    assert gitinfo.run_git(repo, "status") is None


def test_sha256_file_matches_hashlib(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 9000
    target = tmp_path / "blob.bin"
    target.write_bytes(payload)
    assert gitinfo.sha256_file(target) == "sha256:" + hashlib.sha256(payload).hexdigest()
    with pytest.raises(FileNotFoundError):
        gitinfo.sha256_file(tmp_path / "missing")


def test_a_hanging_git_times_out_to_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert gitinfo.run_git(tmp_path, "status", timeout=0.3) is None
