"""The verification benchmark in quick mode: no request of any arm overflows a strict window, the wrong family
is calibrated on its first response, the right tokenizer never is, and the table prints the run's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
sys.path[:0] = [sys.argv[1] + "/benchmarks", sys.argv[1] + "/tests"]
import verify_bench
result = verify_bench.run(quick=True)
print(json.dumps({"result": result, "section": verify_bench.render(result)}))
"""


def test_quick_verify_bench_has_no_overflow_and_prints_the_table(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    arms = out["result"]["arms"]
    assert set(arms) == {"right", "wrong family", "kwargs", "kwargs reversed"}
    assert all(a["requests"] >= 50 and a["overflows"] == 0 for a in arms.values()), arms
    assert arms["right"]["calibrated_at"] == [None] and arms["right"]["gap_abs_max"] == 0
    assert arms["wrong family"]["calibrated_at"] == [1] and arms["wrong family"]["after_under_max"] <= 0
    section = "\n".join(out["section"])
    assert "| arm | requests | calibrated after (requests) |" in section
    for name, a in arms.items():  # each arm's row carries this run's overflow count and ratio spread
        assert f"| {name} | {a['requests']} |" in section and f"({a['ratio_spread']:.4f})" in section
