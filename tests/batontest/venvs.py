"""Temporary venvs for packages built the way a third party builds them (offline, no build isolation).

Why a pip-less venv that sees the dev venv's site-packages: creating it takes a second, nothing is downloaded,
and the dev venv stays untouched; what the test installs into it is visible only there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

RUN_CLI = "from baton_engine.cli import main; main()"


def make_venv(root: Path) -> Path:
    """A venv at ``root`` layered over the dev venv; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    dev_site = sysconfig.get_paths()["purelib"]
    Path(purelib, "_baton_dev_site.pth").write_text(f"import site; site.addsitedir({dev_site!r})\n")
    return python


def install(python: Path, source: Path, *, editable: bool = False) -> None:
    """``pip install --no-deps --no-index --no-build-isolation [-e] source`` into the venv of ``python``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", *(["-e"] if editable else []), str(source)],
        check=True, timeout=300, capture_output=True,
    )


def run_in(python: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python args...`` with a minimal environment (no BATON_* settings unless given in ``env``)."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if "PYTHONPATH" in os.environ:  # a checkout put first on the path is the one the venv imports too
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**base, **(env or {})}, check=False)


def baton(python: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The ``baton`` CLI as installed in that venv."""
    return run_in(python, "-c", RUN_CLI, *args, cwd=cwd, env=env)
