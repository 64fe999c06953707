"""The verification benchmark in quick mode: no request of any arm overflows a strict window, the wrong family
is calibrated on its first response, the right tokenizer never is, and the table prints the run's figures."""

from __future__ import annotations

from pathlib import Path

from batontest.quick_bench import run_quick


def test_quick_verify_bench_has_no_overflow_and_prints_the_table(tmp_path: Path) -> None:
    out = run_quick("tokens.verify_bench", tmp_path)
    arms = out["result"]["arms"]
    assert set(arms) == {"right", "wrong family", "kwargs", "kwargs reversed"}
    assert all(a["requests"] >= 50 and a["overflows"] == 0 for a in arms.values()), arms
    assert arms["right"]["calibrated_at"] == [None] and arms["right"]["gap_abs_max"] == 0
    assert arms["wrong family"]["calibrated_at"] == [1] and arms["wrong family"]["after_under_max"] <= 0
    section = "\n".join(out["section"])
    assert "| arm | requests | calibrated after (requests) |" in section
    for name, a in arms.items():  # each arm's row carries this run's overflow count and ratio spread
        assert f"| {name} | {a['requests']} |" in section and f"({a['ratio_spread']:.4f})" in section
