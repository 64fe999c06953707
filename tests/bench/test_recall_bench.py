"""The needle-recall section in quick mode: one ``baton_recall`` call finds >= 95% of the needles, the
chat-only workload's 12 early facts are in the brief after one compaction at 8K and 64K (issue 12: 0 and 1),
and Hermes' built-in compressor ran on the same sessions (its retained tokens are the comparison's base)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from batontest.quick_bench import run_quick

pytestmark = [pytest.mark.hermes,
              pytest.mark.skipif(importlib.util.find_spec("agent") is None, reason="needs hermes-agent")]


def test_quick_recall_section(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    home.mkdir()
    out = run_quick("recall.recall_bench", tmp_path,
                    {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HERMES_HOME": str(home)})
    result = out["result"]
    assert all(r["degraded"] is None for r in result["tools"] + result["chat"])
    assert all(r["one_call"] >= 0.95 for r in result["tools"] + result["chat"]), result
    assert [(r["window"], r["needles"], r["in_brief"]) for r in result["chat"]] == [(8192, 12, 1.0), (65536, 12, 1.0)]
    rows = result["tools"] + result["chat"]
    assert all(r["builtin"]["llm_calls"] >= 1 and r["builtin"]["tokens_after"] > 0 for r in rows)
    section = "\n".join(out["section"])
    assert "needle recall with ONE baton_recall call >= 95.0% (every session): met" in section
    for r in rows:  # the retained figures in the table are the run's
        assert f"{r['tokens_after']:,} / {r['builtin']['tokens_after']:,}" in section
    assert "45.8%" in section and "NOT measured here" in section
