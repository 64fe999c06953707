"""The output cap as a function of the prompt's size near the limit: what each window sends, confirmed or not.

    .tox/hermes/bin/python benchmarks/budget/cap_bench.py [--out benchmarks/results]

For each window (4K, 16K, 64K) the request asks for Hermes' default 65,536 output tokens and the prompt grows from
a third of the window to past it, one token at a time near the end. Each prompt goes through ``budget.decide``
with the window's limits (``policy.Limits.clamped``, as the engine builds them) twice: a confirmed exact count,
and an unconfirmed one (the route's first request: ``verify.UNCONFIRMED_SHARE`` of it kept free). The cap sent is
the caller's when left, the lowered one, or the smallest cap a request that needs compaction carries if it cannot
be shortened. Checked over every prompt: the cap never grows with the prompt (monotone), never falls below
``policy.MIN_CAP_TOKENS`` (unless the caller asked for less), and a prompt that fits plus its cap never exceeds
the window. Writes ``cap_near_limit.png`` and prints the report's section (``run.py`` adds both to REPORT.md).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from baton_engine.budget import Margins, decide
from baton_engine.policy import MIN_CAP_TOKENS, Limits
from baton_engine.request import OutputCap
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import UNCONFIRMED_SHARE

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("the cap at 4K/16K/64K as the prompt grows past the window: monotone, never below 256, "
               "prompt + cap <= window"),
    "target": "all three hold for every prompt and count state",
    "findings": "Figures behind the code's constants",
    "test": "tests/bench/test_quick_run.py",
}

REPO = Path(__file__).resolve().parents[2]
ASKED = 65_536
WINDOWS = (4096, 16_384, 64_000)
STATES = {"confirmed": 0.0, "unconfirmed": UNCONFIRMED_SHARE}


def sent_cap(window: int, prompt: int, share: float) -> tuple[int, str]:
    """(the cap the request carries, the decision) for an exact ``prompt`` in ``window``."""
    limits = Limits.clamped(window, threshold=window, min_output_tokens=4096, fallback_margin_tokens=1024)
    decision = decide(TokenCount(prompt, True, "hf:Qwen/Qwen3-8B"), limits, cap=OutputCap("max_tokens", ASKED),
                      margins=Margins(fallback=limits.fallback_margin_tokens,
                                      unconfirmed=math.ceil(share * prompt)))
    return (ASKED if decision.action == "leave" else decision.value or 0), decision.action  # type: ignore[return-value]


def prompts(window: int) -> list[int]:
    coarse = list(range(window // 3, window - 512, max(window // 400, 1)))
    return coarse + list(range(window - 512, window + 64))


def run() -> dict[str, dict[str, list[tuple[int, int, str]]]]:
    """Per window (as a string: the results are JSON) and count state: (prompt, cap sent, action) rows."""
    return {f"{window}": {state: [(p, *sent_cap(window, p, share)) for p in prompts(window)]
                          for state, share in STATES.items()} for window in WINDOWS}


def render(results: dict[str, dict[str, list[tuple[int, int, str]]]]) -> list[str]:
    """The report's section: per window and count state, the checks over every prompt, and the plot."""
    lines = ["## The cap near the limit (`benchmarks/budget/cap_bench.py`)", "",
             "The output cap a request asking for 65,536 carries, as its exact prompt grows to the window and past "
             "it, with the window's limits (`policy.Limits.clamped`), confirmed or not (the route's first "
             f"request keeps {UNCONFIRMED_SHARE:.0%} of its prompt free). At 9dba563 an unconfirmed route got a cap of "
             "1 at a 42,666-token prompt and 21,333 at 42,667 (64,000 window), and a confirmed one caps of 64, 8 "
             "and 1 at W-64, W-8 and W-1.", "",
             "| window | count | monotone | smallest cap sent | prompt + cap <= W | first prompt shortened |",
             "|---|---|---|---|---|---|"]
    for window, states in results.items():
        for state, rows in states.items():
            caps = [cap for _, cap, _ in rows]
            monotone = all(a >= b for a, b in zip(caps, caps[1:]))
            fits = all(p + cap <= int(window) for p, cap, action in rows if action != "needs_compaction")
            shortened = next((p for p, _, action in rows if action == "needs_compaction"), None)
            where = f"{shortened:,} (W-{int(window) - shortened})" if shortened is not None else "none"
            lines.append(f"| {int(window):,} | {state} | {'yes' if monotone else 'NO'} | {min(caps)} | "
                         f"{'yes' if fits else 'NO'} | {where} |")
    return [*lines, "", "![the cap near the limit](cap_near_limit.png)", ""]


def plot(results: dict[str, dict[str, list[tuple[int, int, str]]]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(12, 4))
    for axis, (window, states) in zip(axes, results.items()):
        for state, rows in states.items():
            shown = [(p, min(cap, int(window))) for p, cap, _ in rows]
            axis.plot([p for p, _ in shown], [c for _, c in shown], label=state, linewidth=1)
        axis.axhline(MIN_CAP_TOKENS, color="grey", linestyle=":", label=f"smallest cap {MIN_CAP_TOKENS}")
        axis.axvline(int(window), color="red", linestyle="--", label="window")
        axis.set_yscale("log")
        axis.set_title(f"W = {int(window):,}, {ASKED:,} asked")
        axis.set_xlabel("prompt tokens")
        axis.set_ylabel("output cap sent")
        axis.legend(fontsize=7)
    figure.tight_layout()
    path = out / "cap_near_limit.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    results = run()
    print("\n".join(render(results)))
    print(f"plot: {plot(results, args.out)}")


if __name__ == "__main__":
    main()
