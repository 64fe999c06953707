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
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from baton_engine.handoff.model import Repository

GIT_TIMEOUT_SECONDS = 5.0
STORE_DIR_NAMES = (".baton", ".threadline")
_HASH_CHUNK = 1 << 20


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


def git_toplevel(root: Path) -> Path | None:
    """The work tree's top directory, or None outside git."""
    out = run_git(root, "rev-parse", "--show-toplevel")
    return Path(out) if out else None


def git_head(root: Path) -> str | None:
    """Full sha of HEAD; None outside git or in a repository without commits."""
    out = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return out or None


def git_dirty(root: Path) -> bool | None:
    """True when tracked or untracked changes exist outside the store directories; None outside git."""
    pathspec = [f":(exclude,top){name}" for name in STORE_DIR_NAMES]
    out = run_git(root, "status", "--porcelain", "--untracked-files=normal", "--", ":(top)", *pathspec)
    if out is None:
        return None
    return bool(out.strip())


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
    """The ``origin`` URL (else the first remote's), credentials stripped; None when there is none."""
    remotes = run_git(root, "remote")
    if not remotes:
        return None
    names = remotes.split()
    name = "origin" if "origin" in names else names[0]
    url = run_git(root, "remote", "get-url", name)
    return strip_credentials(url) if url else None


def repository_info(root: Path) -> Repository | None:
    """The record's ``project.repository`` block, or None when ``root`` is not in a git work tree."""
    if not is_git_repo(root):
        return None
    return Repository(vcs="git", remote_hint=remote_hint(root), head=git_head(root), dirty=git_dirty(root))


def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes, read in chunks (large artifacts stay cheap in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()
