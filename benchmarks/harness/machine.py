"""Where a run's figures come from: the machine, the versions of the peers and the checkout's commit, printed at the
top of the report so a figure is never read without them."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {name: metadata.version(name) for name in
                ("hermes-agent", "incontext", "tokenizers", "transformers", "tiktoken", "matplotlib")}
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(), "versions": versions, "commit": commit()}


def commit() -> str:
    """The checkout's commit (``BATON_BENCH_COMMIT`` for a snapshot without .git)."""
    if os.environ.get("BATON_BENCH_COMMIT"):
        return os.environ["BATON_BENCH_COMMIT"]
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"
