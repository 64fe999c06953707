"""The fewest turns between two compactions: ``run.py``'s growing session at one window, every arm.

    .tox/hermes/bin/python benchmarks/compaction/gap_bench.py [--window 16384] [--turns 600]

The same session, arms and driving as ``run.py``'s "growing 600-turn session" (``long_session_bench.measure``), at one
window only, so a change to the limits is measured in minutes instead of the whole benchmark's hour. Prints per
arm the compactions, the fewest and median turns between two of them, the peak request and why each compaction
fired. Goal (issue 30): the fewest turns between two compactions >= 5 on every arm at 16K.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the benchmarks package and batontest, from any folder

from benchmarks.harness.isolation import isolate  # noqa: E402

isolate()  # before any Hermes import

from batontest.model_server import ModelServer, ScriptedPolicy  # noqa: E402

from benchmarks.compaction import long_session_bench  # noqa: E402
from benchmarks.compaction.long_session_bench import FALLBACK_ARM  # noqa: E402
from benchmarks.harness import arms, workload  # noqa: E402
from benchmarks.harness.judge import MODEL, QWEN3, Judge  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("fewest / median turns between compactions at 16K: baton 5 / 9, baton-tail0 5 / 10 "
               "(baton-fallback 2 / 6)"),
    "target": ">= 5 on every arm (issue 30; the fallback arm refuted by the workload)",
    "findings": "Figures behind the code's constants",
    "test": None,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=16384)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--arms", nargs="*", default=["baton", "baton-tail0", FALLBACK_ARM])
    args = parser.parse_args()
    judge = Judge()
    tails = {"baton": None, "baton-tail0": 0, FALLBACK_ARM: None}
    session = workload.session_of_turns(args.turns, scale=0.3)
    print("| window | arm | trigger | compactions | fewest / median turns between | peak | requests > window | "
          "why |", flush=True)
    print("|---|---|---|---|---|---|---|---|", flush=True)
    with ModelServer(ScriptedPolicy([], auxiliary_answer=arms.STUB_SUMMARY), context_window=2_000_000,
                     model_name=MODEL) as server:
        for arm in args.arms:  # one arm at a time: each row as soon as it is measured
            runtimes = {arm: arms.baton_runtime(QWEN3, tails[arm])}
            for row in long_session_bench.measure(judge, runtimes, server, arms.AuxiliaryMeter(), session, [args.window],
                                          builtin=False):
                print(f"| {row['window']:,} | {row['arm']} | {row['trigger']:,} | {row['compactions']} | "
                      f"{row['min_gap_turns']} / {row['median_gap_turns']} | {row['peak']:,} | "
                      f"{row['over_window']} | {row['triggers']} |", flush=True)


if __name__ == "__main__":
    logging.getLogger("baton_engine.tokens").setLevel(logging.ERROR)
    main()
