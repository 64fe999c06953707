"""Repository facts for handoff records, read through the ``git`` command.

Why a subprocess and not a library: ``git`` is what the user runs, so its answer (worktrees,
safe.directory, sparse checkouts) is the truth. Every call has a timeout, never prompts for
credentials, takes no optional locks, and degrades to ``None`` outside a repository, when git
is missing, or when it hangs: capture must never break because git did.

Dirty state ignores the store directories (``.baton/``, ``.threadline/``): writing a handoff
must not make the next capture look dirty.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cachetools import LRUCache

from baton_engine.handoff.model import Repository

GIT_TIMEOUT_SECONDS = 5.0
STORE_DIR_NAMES = (".baton", ".threadline")
_HASH_CHUNK = 1 << 20
# File digests remembered (LRU): a stat signature and a 71-character digest each, per process.
HASH_MEMO_ENTRIES = 1024
_HASHES: LRUCache[tuple[object, ...], str] = LRUCache(maxsize=HASH_MEMO_ENTRIES)
_HASHES_LOCK = threading.Lock()


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "LC_ALL": "C",
        }
    )
    return env


def run_git(root: Path, *args: str, timeout: float = GIT_TIMEOUT_SECONDS) -> str | None:
    """stdout of ``git -C root args`` (stripped of the trailing newline), or None on any failure."""
    try:
        completed = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.rstrip("\n")


def is_git_repo(root: Path) -> bool:
    """True when ``root`` is inside a git work tree."""
    return run_git(root, "rev-parse", "--is-inside-work-tree") == "true"


@dataclass(frozen=True)
class RepoState:
    """What a capture, its validation and its freshness check need from git, read at once (``snapshot``)."""

    in_repo: bool
    head: str | None = None  # None in a repository without commits
    dirty: bool | None = None
    remote_hint: str | None = None

    def repository(self) -> Repository | None:
        """The record's ``project.repository`` block; None outside a git work tree."""
        if not self.in_repo:
            return None
        return Repository(vcs="git", remote_hint=self.remote_hint, head=self.head, dirty=self.dirty)


OUTSIDE = RepoState(in_repo=False)


def snapshot(root: Path, *, remote: bool = True) -> RepoState:
    """Head, dirty state and (when ``remote``) the remote hint from one ``git status --porcelain=v2 --branch``
    and one ``git remote -v``: a compaction asks git once, not once per fact and per step."""
    pathspec = [f":(exclude,top){name}" for name in STORE_DIR_NAMES]
    out = run_git(root, "status", "--porcelain=v2", "--branch", "--untracked-files=normal", "--", ":(top)", *pathspec)
    if out is None:
        return OUTSIDE
    head, dirty = None, False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.removeprefix("# branch.oid ").strip()
            head = oid if oid != "(initial)" else None
        elif line and not line.startswith("#"):
            dirty = True
    return RepoState(True, head, dirty, remote_hint(root) if remote else None)


def strip_credentials(url: str) -> str:
    """A remote URL without user info, query or fragment (where tokens hide).

    scp-like remotes (``git@host:owner/repo.git``) carry no secret and are kept as they are.
    """
    text = url.strip()
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "[unparseable remote]"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def remote_hint(root: Path) -> str | None:
    """The ``origin`` fetch URL (else the first remote's), credentials stripped; None when there is none."""
    out = run_git(root, "remote", "-v")
    urls: dict[str, str] = {}
    for line in (out or "").splitlines():
        name, _, rest = line.partition("\t")
        url, _, kind = rest.rpartition(" ")
        if name and url and kind == "(fetch)":
            urls.setdefault(name, url)
    if not urls:
        return None
    return strip_credentials(urls.get("origin") or next(iter(urls.values())))


def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes, read in chunks (large artifacts stay cheap in memory).

    Memoised by the file's stat signature (device, inode, size, mtime and ctime in ns; any write changes
    ctime): a compaction hashes each artifact for the record, its validation and its freshness check, and the
    next compaction the same unchanged files again."""
    info = os.stat(path)
    key = (os.fspath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    with _HASHES_LOCK:
        known = _HASHES.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    found = "sha256:" + digest.hexdigest()
    with _HASHES_LOCK:
        _HASHES[key] = found
    return found
