"""A backend author's path, as written in docs/tokenizers.md and the generated README, in a fresh venv.

Why a real venv from the registry (not the layered venvs of ``batontest.venvs``): the author has only
``baton-engine``; hatchling, pytest and the PATH are whatever the documented steps bring. Running the
documented lines themselves keeps the page and the template honest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS_PAGE = REPO / "docs" / "tokenizers.md"
MARKER = "<!-- author-path -->"


def shell_block(text: str, after: str = "") -> str:
    """The first fenced block (after ``after``), as a script: one command a line, comments dropped."""
    start = text.index(after) if after else 0
    match = re.search(r"```[a-z]*\n(.*?)```", text[start:], re.S)
    assert match, f"no fenced block after {after!r}"
    lines = [line.split("  #", 1)[0].rstrip() for line in match.group(1).splitlines()]
    return "\n".join(line for line in lines if line)


@pytest.fixture(scope="module")
def author_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A venv with pip and baton-engine from this checkout, nothing else; the environment an author's shell has."""
    root = tmp_path_factory.mktemp("author")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith(("BATON_", "INCONTEXT_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           str(REPO)], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return root, env


def run_script(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-eux", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900, check=False)


def test_the_documented_steps_work_in_a_venv_with_only_baton_engine(
    author_venv: tuple[Path, dict[str, str]]
) -> None:
    root, env = author_venv
    script = shell_block(DOCS_PAGE.read_text(encoding="utf-8"), MARKER)
    assert "--no-build-isolation" not in script and "\npytest" not in script
    done = run_script(script, root, env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert "baton-backend-mytok" in out  # tokens backends
    assert "all checks passed" in out  # tokens check
    assert re.search(r"exact\s+no", out), out  # tokens count: the starter is an estimate
    assert re.search(r"\b2 passed\b", out), out  # the package's own test, with the venv's pytest

    package_readme = (root / "mytok" / "README.md").read_text(encoding="utf-8")
    again = run_script(shell_block(package_readme), root / "mytok", env)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    assert "all checks passed" in again.stdout and re.search(r"\b2 passed\b", again.stdout)
