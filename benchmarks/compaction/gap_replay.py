"""Can any post-compaction size give 5 turns between compactions? A replay of the growing session's turn sizes.

    .tox/hermes/bin/python benchmarks/compaction/gap_replay.py [--turns 600] [--triggers 9702 12288 13824 14336]

``gap_bench.py`` measures the engine; this replays only the arithmetic, to say what no policy of the compacted
size can reach: the request grows by each turn's exact Qwen3 size (the user message, then its call and results, then
the closing answer), a compaction fires when a request reaches the trigger and leaves the fixed part, ``kept``
tokens (Baton's block and verbatim tail) and the current turn's part (its results are never elided). Prints the
fewest turns between two compactions, the gaps under 5 and the compactions, per trigger and kept size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the benchmarks package and batontest, from any folder

from benchmarks.harness.isolation import isolate  # noqa: E402

isolate()

from benchmarks.harness import workload  # noqa: E402
from benchmarks.harness.judge import Judge  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("no kept size reaches 5 turns between compactions at the fallback arm's trigger: four "
               "turns grow the request by up to 11,468 tokens"),
    "target": "what no policy of the compacted size can reach (issue 30)",
    "findings": "Figures behind the code's constants",
    "test": None,
}

KEPT = (0, 200, 400, 600, 800, 1_000, 1_400, 2_000, 3_000, 4_000, 5_000)


def replay(parts: list[tuple[int, int, int]], fixed: int, trigger: int, kept: int) -> tuple[int, int, int]:
    """``(fewest gap, gaps under 5, compactions)`` for turns of ``(user, call and results, closing)`` tokens."""
    size, compactions = fixed, []
    for turn, (user, results, closing) in enumerate(parts, start=1):
        for added, current in ((user, user), (results, user + results)):  # the two requests of a turn
            size += added
            if size >= trigger:
                compactions.append(turn)
                size = fixed + kept + current
        size += closing
    gaps = [b - a for a, b in zip(compactions, compactions[1:])]
    return min(gaps), sum(g < 5 for g in gaps), len(compactions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--triggers", type=int, nargs="*", default=[9_702, 12_288, 13_824, 14_336])
    args = parser.parse_args()
    judge = Judge()
    fixed = judge.tokens([])
    parts = []
    for turn in workload.session_of_turns(args.turns, scale=0.3).turns:
        messages = list(turn.messages)
        user, before_closing = judge.tokens(messages[:1]), judge.tokens(messages[:-1])
        parts.append((user - fixed, before_closing - user, judge.tokens(messages) - before_closing))
    print("| trigger | " + " | ".join(f"kept {k:,}" for k in KEPT) + " |")
    print("|---|" + "---|" * len(KEPT))
    for trigger in args.triggers:
        cells = [replay(parts, fixed, trigger, kept) for kept in KEPT]
        print(f"| {trigger:,} | " + " | ".join(f"{low} ({short} < 5, {n})" for low, short, n in cells) + " |")


if __name__ == "__main__":
    main()
