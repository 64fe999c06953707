"""The gateway soak at full size (issue 33, item 6): 16 sessions x 200 turns through one REAL ``hermes gateway run``.

    python benchmarks/host/gateway_soak.py [--sessions 16] [--turns 200] [--out benchmarks/results]

Needs Hermes with the API server's aiohttp (the tox env ``hermes`` or ``hermes022``: run it with that env's Python).
The driver and its checks are ``tests/batontest/gateway_soak.py``, shared with CI's scaled-down run
(``tests/hermes_gateway/test_gateway_soak.py``), so "cross-talk" and "overflow" mean the same in both. Not part of
CI: at full size it took 52-66 minutes on a shared 2-core machine. Writes ``gateway_soak.json`` (figures only) and prints
them; exits 1 when a required figure does not hold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

from batontest.gateway_soak import GatewaySoak, SoakSize  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("16 sessions x 200 turns through one gateway: 0 tracebacks through Baton, gateway RSS "
               "end vs middle +7.5%"),
    "target": "0 failures, cross-talk or overflows; RSS within 10%",
    "findings": "A busy gateway",
    "test": "tests/hermes_gateway/test_gateway_soak.py",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reset-every", type=int, default=50, help="a new transcript every N turns per session")
    parser.add_argument("--engine", default="baton", choices=["baton", "compressor"],
                        help="compressor: Hermes' built-in, the baseline for the gateway's RSS (the checks then fail)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:7.0f} s] {line}", flush=True)

    with tempfile.TemporaryDirectory(prefix="baton-gateway-soak-") as work:
        result = GatewaySoak(Path(work), SoakSize(args.sessions, args.turns, reset_every=args.reset_every),
                             progress=progress, engine=args.engine).run()
    figures = result.figures()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gateway_soak.json").write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=1))
    for name in ("errors", "baton_tracebacks", "boundary_faults", "crosstalk", "unattributed", "overflows"):
        for line in getattr(result, name)[:5]:
            print(f"{name}: {line}")
    return 1 if figures["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
