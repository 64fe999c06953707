"""The reclamation benchmark in quick mode (60 turns at 64K, Hermes 0.22's interface): every arm ran the session
without a request over the window, the simulated prefix cache read only what a request shares with the one before,
Baton with reclamation pruned and lost no needle against Baton without it, and the report section shows the run's
figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from batontest.quick_bench import run_quick

from baton_engine.hermes.config import installed_hermes_version

pytestmark = [pytest.mark.hermes, pytest.mark.skipif(
    (installed_hermes_version() or "0.19").startswith("0.19"),
    reason="the built-in compressor's pruning and the prune hook are Hermes 0.22's")]


def test_quick_reclaim_bench(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    home.mkdir()
    out = run_quick("compaction.reclaim_bench", tmp_path,
                    {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HERMES_HOME": str(home)})
    rows = {row["arm"]: row for row in out["result"]["rows"]}
    assert set(rows) == {"hermes-builtin prune 48000", "hermes-builtin prune off", "baton", "baton reclaim"}
    for row in rows.values():
        assert row["requests"] == 120 and row["over_window"] == 0, row
        assert 0 < row["cached"] < row["sent"] and row["uncached"] == row["sent"] - row["cached"]
        # every rewrite of sent history is a cache break
        assert row["breaks"] >= row["compactions"] + row["prunes"], row
        assert row["cost"]["0.1"] < row["cost"]["0.25"] < row["cost"]["0.5"] <= row["sent"]
    assert rows["baton reclaim"]["prunes"] >= 1 and rows["baton"]["prunes"] == 0
    assert rows["hermes-builtin prune 48000"]["prunes"] >= 1 and rows["hermes-builtin prune off"]["prunes"] == 0
    assert rows["baton reclaim"]["needles_found"] >= rows["baton"]["needles_found"]
    assert rows["baton reclaim"]["sent"] < rows["baton"]["sent"]
    section = "\n".join(out["section"])
    for row in rows.values():
        assert f"| {row['arm']} | {row['sent']:,} | {row['uncached']:,} |" in section
