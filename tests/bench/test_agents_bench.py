"""The ten-agents benchmark in quick mode: agents taking turns cost at most 1.5x one agent alone per call, each
engine is the host's per-agent copy, and the section prints this run's figures."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from batontest.quick_bench import run_quick

pytestmark = [pytest.mark.hermes,
              pytest.mark.skipif(importlib.util.find_spec("agent") is None, reason="needs hermes-agent (tox env hermes)")]


def test_quick_agents_bench_meets_the_ratio_and_prints_its_figures(tmp_path: Path) -> None:
    out = run_quick("host.agents_bench", tmp_path)
    result = out["result"]
    assert result["agents"] == 10 and result["messages_per_round"] >= 10 * 80
    assert result["ratio"] <= 1.5 and result["target_met"], result
    assert 0 < result["idle_clone_bytes"] < 64 * 1024  # an idle engine copy holds no memo or counter
    assert 0 < result["retained_bytes_per_agent"] < 20 * result["history_bytes_per_agent"], result
    section = "\n".join(out["section"])
    assert f"| one agent alone | {result['alone_p50_ms']:.2f} |" in section
    assert f"| 10 agents taking turns | {result['turns_p50_ms']:.2f} |" in section
    assert f"Ratio {result['ratio']:.2f}x" in section
