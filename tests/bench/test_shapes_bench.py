"""The shapes benchmark in quick mode (issue 30, item 7): every request kind Hermes 0.19.0's transports build, at
4,096 and 16,384 windows and bands from half the window to three times it, text only and with images, leaves
Baton's middleware valid and within the window; the table prints this run's counts; the script exits non-zero
when a request is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from batontest.hermes_run import require_hermes
from batontest.quick_bench import REPO, run_quick

pytestmark = pytest.mark.hermes


def test_quick_shapes_bench_every_request_is_valid_and_fits(tmp_path: Path) -> None:
    require_hermes()
    out = run_quick("shapes_bench", tmp_path)
    result, section = out["result"], "\n".join(out["section"])
    rows = result["rows"]
    kinds = {"chat_completions", "anthropic_messages", "anthropic_thinking", "codex_responses", "bedrock_converse"}
    assert {r["kind"] for r in rows} == kinds
    assert len(rows) == len(kinds) * 2 * 3 * 2  # kinds x windows x bands x (text, images)
    assert [r for r in rows if not (r["valid"] and r["fits"])] == []
    assert result["invalid"] == 0 and result["over_window"] == 0
    # the bands are the sizes they claim: Hermes' request is at 3x (within 15%) and far over the window is shortened
    far = [r for r in rows if r["band"] == 3.0]
    assert all(abs(r["before"] / r["window"] - 3.0) < 0.45 for r in far), [r["before"] for r in far]
    assert all(r["shortened"] and r["prompt"] + r["cap"] <= r["window"] for r in far)
    assert any(r["media"] > 0 for r in rows if r["images"]) and all(r["media"] == 0 for r in rows if not r["images"])
    for kind in kinds:
        assert f"| {kind} | 3.0x | 4 | 4 | 4 | 0 | 0 | 4 |" in section
    assert f"{len(rows)} requests: 0 invalid, 0 over the window (0 and 0 required: met)." in section


def test_the_benchmark_exits_non_zero_on_a_request_over_the_window(tmp_path: Path) -> None:
    """A Baton that sends Hermes' request unchanged (no middleware answer): the script says so and fails."""
    require_hermes()
    script = ("import sys; sys.argv[1:] = ['--quick']\n"
              "from baton_engine.hermes import patches\n"
              "patches.Activation.llm_request = lambda self, **kwargs: None\n"
              "import shapes_bench; raise SystemExit(shapes_bench.main())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{REPO}/benchmarks:{REPO}/tests:{REPO}"})
    assert done.returncode == 1, done.stderr[-2000:]
    assert "(0 and 0 required: **NOT met**)" in done.stdout and "FAILED" in done.stderr
