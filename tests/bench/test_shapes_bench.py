"""The shapes benchmark (issue 30, item 7) exits non-zero when a request is invalid or over the window. Its quick
run's figures are checked with the benchmark's quick run (``test_quick_run``), which runs it once for the report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from batontest.hermes_run import require_hermes
from batontest.quick_bench import REPO

pytestmark = pytest.mark.hermes


def test_the_benchmark_exits_non_zero_on_a_request_over_the_window(tmp_path: Path) -> None:
    """A Baton that sends Hermes' request unchanged (no middleware answer): the script says so and fails."""
    require_hermes()
    script = ("import sys; sys.argv[1:] = ['--quick', '--bands', '3.0']\n"
              "from baton_engine.hermes import patches\n"
              "patches.Activation.llm_request = lambda self, **kwargs: None\n"
              "from benchmarks.budget import shapes_bench; raise SystemExit(shapes_bench.main())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{REPO}:{REPO}/tests"})
    assert done.returncode == 1, done.stderr[-2000:]
    assert "(0 and 0 required: **NOT met**)" in done.stdout and "FAILED" in done.stderr
