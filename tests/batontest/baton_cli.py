"""The installed ``baton`` console script as a real process, and the result type every CLI runner returns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPTS = Path(sys.executable).parent
BATON = SCRIPTS / "baton"


@dataclass
class CliResult:
    """Exit code and both streams of one `baton` invocation; ``data`` parses a ``--json`` answer."""

    code: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.stdout)


def clean_env() -> dict[str, str]:
    """No BATON_*/INCONTEXT_* settings leak in: only the project's own config decides."""
    return {key: value for key, value in os.environ.items() if not key.startswith(("BATON_", "INCONTEXT_"))}


def run_baton(*args: str, cwd: Path, stdin: str | None = None) -> CliResult:
    """Run the installed console script in ``cwd`` with a clean environment."""
    assert BATON.exists(), f"console script not installed at {BATON}; pip install -e ."
    done = subprocess.run([str(BATON), *args], cwd=cwd, capture_output=True, text=True, input=stdin,
                          env=clean_env(), timeout=120)
    return CliResult(done.returncode, done.stdout, done.stderr)
