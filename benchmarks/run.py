"""Head-to-head benchmark: Baton vs Hermes' built-in compressor vs incontext, in one process, one run.

    python benchmarks/run.py [--quick] [--out benchmarks/results]

Needs hermes-agent==0.19.0, incontext==0.0.5 and matplotlib next to the project (``scripts/bench.sh``
builds that venv). Writes ``results.json`` (raw, gitignored), then ``report/render.py`` turns it into
``REPORT.md`` + PNG plots. Everything is offline: tokenizers come from the repository's assets, the
model and /tokenize endpoints are loopback stubs from ``tests/batontest``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the benchmarks package and batontest, from any folder

from benchmarks.harness.isolation import isolate  # noqa: E402

isolate()  # before any Hermes import

from batontest.model_server import ModelServer, ScriptedPolicy  # noqa: E402

from benchmarks.budget import budgets_bench, cap_bench, shapes_bench  # noqa: E402
from benchmarks.compaction import compress_bench, long_session_bench  # noqa: E402
from benchmarks.harness import arms, workload  # noqa: E402
from benchmarks.harness.judge import MODEL, QWEN3, Judge  # noqa: E402
from benchmarks.harness.machine import machine  # noqa: E402
from benchmarks.host import memory_bench, overhead_bench  # noqa: E402
from benchmarks.recall import recall_bench, store_bench  # noqa: E402
from benchmarks.report import render  # noqa: E402
from benchmarks.tokens import anchor_bench, estimator_bench, loop_bench, tokens_bench  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    logging.getLogger("incontext").setLevel(logging.ERROR)  # one "requires_compression" line per full request
    logging.getLogger("baton_engine.tokens").setLevel(logging.ERROR)  # one line per simulated tokenizer failure
    started = time.time()
    judge = Judge()
    runtimes = {"baton": arms.baton_runtime(QWEN3, None), "baton-tail0": arms.baton_runtime(QWEN3, 0)}
    meter = arms.AuxiliaryMeter()
    sizes = [10_000, 50_000] if args.quick else [10_000, 50_000, 200_000, 500_000]
    turns = 60 if args.quick else 600
    long_session = workload.session_of_turns(turns, scale=0.3)
    results: dict[str, Any] = {"machine": machine(), "quick": args.quick}
    with ModelServer(ScriptedPolicy([], auxiliary_answer=arms.STUB_SUMMARY), context_window=2_000_000,
                     model_name=MODEL) as server:
        results["sizes"] = compress_bench.measure(judge, runtimes, server, meter, sizes,
                                                  repeats=3 if args.quick else 9)
        long_runtimes = {**runtimes, long_session_bench.FALLBACK_ARM: arms.baton_runtime(QWEN3, None)}
        results["long"] = long_session_bench.measure(judge, long_runtimes, server, meter, long_session,
                                                     [16384, 65536])
        results["stub_requests"] = len(server.auxiliary_requests)
    results["budgets"] = budgets_bench.measure(judge, long_session, 65536, 65536, 10 if args.quick else 60)
    results["cap"] = cap_bench.run()
    results["shapes"] = shapes_bench.run(args.quick)
    results["estimators"] = estimator_bench.run()
    results["anchor"] = anchor_bench.run(args.quick)
    results["loop"] = loop_bench.run(args.quick)
    results["recall"] = recall_bench.run(args.quick)
    results["store"] = store_bench.run(args.quick)
    results["tokens"] = tokens_bench.run(args.quick)
    results["memory"] = memory_bench.run(args.quick)
    overhead_session = workload.session_of_turns(120 if args.quick else 820, seed=5, scale=0.3)
    results["overhead"] = overhead_bench.measure(judge, runtimes["baton"], overhead_session,
                                                 [200, 600] if args.quick else [200, 1000, 4000], turns=20)
    results["seconds"] = time.time() - started
    (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    print(f"results written in {results['seconds']:.0f} s", flush=True)
    render.write(results, args.out)
    if shapes_bench.failed(results["shapes"]):
        print(f"FAILED: {shapes_bench.target(results['shapes'])[2]} (REPORT.md, shapes section)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
