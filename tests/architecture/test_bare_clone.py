"""The repository is self-sufficient: a clone with nothing beside it runs the tests that read fixtures.

Why a real clone: a test that reads a file outside the repository (a folder the project's own runner happens
to put beside the checkout) passes in CI and fails for every user who clones. Only a clone into an empty
directory proves what a user's clone has; the grep below catches a new outside reference before it is run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from batontest.gitrepo import git

REPO = Path(__file__).resolve().parents[2]
# the tests that once read the reference schema from outside the repository, and every use of it they share
SUBSET = ("tests/store/test_conformance.py", "tests/store/test_model.py", "tests/cli/test_capture.py",
          "tests/compaction/test_anchors.py", "tests/cli/test_journeys.py")
BACKENDS = ("backends/hf", "backends/tiktoken", "backends/vllm", "backends/llamacpp")
# written in pieces so this file does not match itself
OUTSIDE = ("..".__add__("/shared"), "/work".__add__("/"))


def _head() -> str:
    try:
        return git(REPO, "rev-parse", "HEAD")
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip(f"{REPO} is not a git checkout (an unpacked sdist): nothing to clone")


def test_no_tracked_file_reads_outside_the_repository() -> None:
    _head()
    offenders = {}
    for pattern in OUTSIDE:
        done = subprocess.run(["git", "-C", str(REPO), "grep", "-n", "-F", "-e", pattern], capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode in (0, 1), done.stderr  # 1: no match
        if done.stdout:
            offenders[pattern] = done.stdout.splitlines()
    assert not offenders, f"tracked files reference paths outside the repository: {offenders}"


def test_a_bare_clone_runs_the_fixture_reading_tests(tmp_path: Path) -> None:
    head = _head()
    empty = tmp_path / "empty"
    empty.mkdir()
    clone = empty / "baton"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True, timeout=120,
                   capture_output=True)
    git(clone, "checkout", "-q", "--detach", head)
    assert sorted(p.name for p in empty.iterdir()) == ["baton"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(str(clone / part) for part in ("", *BACKENDS)),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONHASHSEED": "0"}
    where = subprocess.run([sys.executable, "-c", "import baton_engine; print(baton_engine.__file__)"], env=env,
                           cwd=clone, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert Path(where).is_relative_to(clone), f"the clone's tests would import {where}, not the clone"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
                           "not vllm_real and not hermes", *SUBSET], env=env, cwd=clone, capture_output=True,
                          text=True, timeout=600, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
