"""A benchmark's quick mode run in its own process, as `scripts/bench.sh` runs it: its result and its report
section, for the tests that check a benchmark's figures (tests/bench); and a report's outline, to compare a
rendered REPORT.md with the committed one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import importlib, json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
bench = importlib.import_module("benchmarks." + sys.argv[2])
result = bench.run(quick=True)
print(json.dumps({"result": result, "section": bench.render(result)}))
"""


def run_quick(module: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``benchmarks/<module>.py``'s (``module`` dotted below ``benchmarks``) ``run(quick=True)`` and ``render`` of it, with ``env`` added to this
    process's environment; fails the test with the benchmark's stderr when it does not exit 0."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO), module], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def outline(report: str) -> tuple[list[str], list[str]]:
    """A REPORT.md's ``##`` headings before its Findings and its Targets table's target names, figures masked
    (``N``), so a quick run's report reads like a full run's."""
    body = report.split("\n## Findings\n")[0]
    headings = [re.sub(r"\d[\d,.]*", "N", line) for line in body.splitlines() if line.startswith("## ")]
    table = body.split("## Targets\n")[1].split("\nSee *Findings*")[0]
    targets = [re.sub(r"\d[\d,.]*", "N", row.split(" | ")[0][2:]) for row in table.splitlines()[3:] if row]
    return headings, targets


def in_order(part: list[str], whole: list[str]) -> bool:
    """Whether ``part`` is ``whole`` with some of its items left out."""
    rest = iter(whole)
    return all(item in rest for item in part)
