"""Usage-anchored counting against exact counts: how wrong, how safe, and which margin share k is enough.

    .venv/bin/python benchmarks/tokens/anchor_bench.py [--quick]

Workloads are ``benchmarks/harness/workload.py``'s deterministic tool-heavy sessions; exact counts come from the real
Qwen3 tokenizer (hf backend, chat template) and o200k (tiktoken). Every request goes through the production path
(``TokenCounter.count_chat(request, anchor)``); the anchor sees the provider's usage of each request once its
response is in, i.e. the exact count of the request one before:

- growing sessions: every model call of 6 sessions (the request carrying the user message, the one after the tool
  results), (b) with no tokenizer at all: the estimate's error after 1, 5 and 20 responses, undercounts, and the
  smallest k with no undercount (``sweep``), plus a compaction-like rewrite of the history every 20 requests;
- the 32 output budgets of ``run.py``'s budget table (requests of 30%..97% of a 65,536 window; the anchor one
  whole turn behind, coarser than per model call): (a) tokenizer lost halfway (exact for the first half of the
  requests, then anchored on usage), (b) no tokenizer, (c) today's rough + 1,024.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

from benchmarks.harness import workload  # noqa: E402

from baton_engine.policy import Limits  # noqa: E402
from baton_engine.request import OutputCap  # noqa: E402
from baton_engine.shapes.cap import apply_output  # noqa: E402
from baton_engine.tokens.anchor import (  # noqa: E402
    DEFAULT_MARGIN_FLOOR_TOKENS,
    DEFAULT_MARGIN_SHARE,
    RECENT_OBSERVATIONS,
    UsageAnchor,
)
from baton_engine.tokens.contract import TokenCount, TokenizerBackend  # noqa: E402
from baton_engine.tokens.counter import TokenCounter  # noqa: E402
from baton_engine.tokens.rough import RoughBackend  # noqa: E402
from batontest.faulty_backends import LostTokenizer  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("k = 0.2 with a 64-token floor: 0 of 32 budget overflows on Qwen3 and o200k, tokenizer "
               "lost halfway or absent; no undercount needs k >= 0.068 / 0.125"),
    "target": "0 budget overflows with usage-anchored counts",
    "findings": "Figures behind the code's constants",
    "test": "tests/bench/test_quick_run.py",
}

SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}
Request = dict[str, Any]
Exact = Callable[[Request], int]
SEEDS = (11, 5, 3, 7, 13, 17)
SHARES = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]
FLOORS = [0, 32, 64, 128]
CHECKPOINTS = (1, 5, 20)
RECENT_CHOICES = (1, 32)  # besides the default: the latest ratio only, and a long memory


def request_of(messages: Sequence[dict[str, Any]]) -> Request:
    return {"messages": [SYSTEM, *messages], "tools": workload.TOOLS}


def model_calls(session: workload.Session) -> list[Request]:
    """The requests Hermes' loop sends: with the user message, then after the tool results (per turn)."""
    requests, history = [], []
    for turn in session.turns:
        messages = list(turn.messages)
        history.append(messages[0])
        requests.append(request_of(history))
        history.extend(messages[1:-1])
        requests.append(request_of(history))
        history.append(messages[-1])
    return requests


def budget_histories(prefix_tokens: Callable[[int], int], turns: int, window: int, count: int) -> list[int]:
    """How many whole turns each budget request holds: the largest prefix within 30%..97% of the window
    (``count`` shares, distinct requests only). ``prefix_tokens(n)`` is the exact count of the first n turns."""
    sizes: list[int] = []
    for share in [0.30 + 0.67 * i / (count - 1) for i in range(count)]:
        used = 0
        while used < turns and prefix_tokens(used + 1) <= share * window:
            used += 1
        if used and used not in sizes:
            sizes.append(used)
    return sizes


def prefix(turns: Sequence[workload.Turn], n: int) -> Request:
    return request_of([m for t in turns[:n] for m in t.messages])


def anchored_counts(requests: Sequence[Request], exact: Exact, backend: TokenizerBackend, *, lost_after: int | None,
                    share: float = DEFAULT_MARGIN_SHARE, floor: int = DEFAULT_MARGIN_FLOOR_TOKENS,
                    recent: int = RECENT_OBSERVATIONS) -> list[TokenCount]:
    """Each request counted the way the Hermes adapter will: counter + anchor, then usage observed."""
    inner = RoughBackend() if lost_after is None else LostTokenizer(backend, lost_after)
    counter = TokenCounter(inner, cache_size=0)
    anchor = UsageAnchor(margin_share=share, margin_floor_tokens=floor, recent_observations=recent)
    counts = []
    for request in requests:
        counts.append(counter.count_chat(request, anchor))
        anchor.observe_exact(request, exact(request))  # the provider's prompt_tokens of the request just sent
    return counts


def estimated_parts(requests: Sequence[Request], exact: Exact,
                    recent: int = RECENT_OBSERVATIONS) -> list[tuple[int, int, int] | None]:
    """(exact, base + estimated, estimated) per request with usage only; None before the first usage.

    Two probes with different margin shares separate the estimated part, so the k and floor sweep is arithmetic.
    """
    plain, doubled = (anchored_counts(requests, exact, RoughBackend(), lost_after=None, share=s, floor=0,
                                      recent=recent) for s in (0.0, 1.0))
    parts = []
    for request, one, two in zip(requests, plain, doubled):
        if one.source != "anchored":
            parts.append(None)
            continue
        parts.append((exact(request), one.tokens, two.tokens - one.tokens))  # type: ignore[operator]
    return parts


def sweep(parts: Sequence[tuple[int, int, int] | None]) -> dict[str, Any]:
    """Undercounts for every (floor, k); the smallest k without one per floor."""
    known = [p for p in parts if p is not None]
    rows = {}
    for floor in FLOORS:
        under = {str(k): sum(1 for e, t, est in known if t + math.ceil(k * est) + floor < e) for k in SHARES}
        needed = max(max(0.0, (e - t - floor) / est) for e, t, est in known if est > 0)
        rows[str(floor)] = {"undercounts": under, "k_needed": needed}
    return {"requests": len(known), "floors": rows}


def error_percent(count: TokenCount, exact: int) -> float:
    return 100.0 * (count.tokens - exact) / exact  # type: ignore[operator]


def growing(exact: Exact, backend: TokenizerBackend, turns: int) -> dict[str, Any]:
    """Scenario (b) over every model call of the sessions, (a) losing the tokenizer halfway, and rewrites."""
    at: dict[int, list[float]] = {n: [] for n in CHECKPOINTS}
    errors, lost_errors, rewrite_errors, all_parts = [], [], [], []
    by_recent: dict[int, list[tuple[int, int, int] | None]] = {n: [] for n in RECENT_CHOICES}
    for seed in SEEDS:
        requests = model_calls(workload.session_of_turns(turns, seed=seed, scale=0.3))
        exacts = [exact(r) for r in requests]
        usage = anchored_counts(requests, exact, backend, lost_after=None)
        for n in CHECKPOINTS:
            at[n].append(error_percent(usage[n], exacts[n]))
        errors += [error_percent(c, e) for c, e in zip(usage, exacts) if c.source == "anchored"]
        half = len(requests) // 2
        lost = anchored_counts(requests, exact, backend, lost_after=half)
        lost_errors += [error_percent(c, e) for c, e in zip(lost[half:], exacts[half:])]
        all_parts += estimated_parts(requests, exact)
        for n in RECENT_CHOICES:
            by_recent[n] += estimated_parts(requests, exact, recent=n)
        for i in range(20, len(requests), 20):  # compaction: brief + recent tail replace the history
            anchor = UsageAnchor()
            anchor.observe_exact(requests[i - 1], exacts[i - 1])
            tail = requests[i]["messages"][-4:]
            brief = {"role": "user", "content": "[Baton resume brief]\n"
                     + "\n".join(str(m.get("content"))[:400] for m in requests[i]["messages"][1:-4])[:4800]}
            rewritten = request_of([brief, *tail])
            rewrite_errors.append(error_percent(anchor.estimate(rewritten), exact(rewritten)))  # type: ignore[arg-type]
    return {
        "requests": len(errors),
        "after_responses": {str(n): {"min": min(v), "median": statistics.median(v), "max": max(v)}
                            for n, v in at.items()},
        "usage_error": {"min": min(errors), "median": statistics.median(errors), "max": max(errors)},
        "usage_undercounts": sum(1 for e in errors if e < 0),
        "lost_error": {"min": min(lost_errors), "median": statistics.median(lost_errors), "max": max(lost_errors)},
        "lost_undercounts": sum(1 for e in lost_errors if e < 0),
        "rewrite_error": {"min": min(rewrite_errors), "median": statistics.median(rewrite_errors),
                          "max": max(rewrite_errors)},
        "rewrite_undercounts": sum(1 for e in rewrite_errors if e < 0),
        "sweep": sweep(all_parts),
        "k_needed_by_recent": {str(n): sweep(p)["floors"][str(DEFAULT_MARGIN_FLOOR_TOKENS)]["k_needed"]
                               for n, p in by_recent.items()},
    }


def budget_counts(exact: Exact, backend: TokenizerBackend, turns: Sequence[workload.Turn],
                  sizes: Sequence[int]) -> dict[str, list[TokenCount]]:
    """(a) and (b) anchored counts of each budget request; the anchor walks the session one whole turn at a time."""
    prefixes = [prefix(turns, n) for n in range(1, max(sizes) + 1)]
    wanted = [n - 1 for n in sizes]
    half = len(sizes) // 2
    usage = anchored_counts(prefixes, exact, backend, lost_after=None)
    lost = anchored_counts(prefixes, exact, backend, lost_after=wanted[half])  # exact for the first half
    return {"anchored_lost": [lost[i] for i in wanted], "anchored_usage": [usage[i] for i in wanted]}


def budget_rows(exact: Exact, backend: TokenizerBackend, turns: Sequence[workload.Turn], window: int,
                count: int) -> dict[str, Any]:
    """Overflows of max_tokens = W - estimate (a, b) next to rough + 1,024 (c), on this tokenizer's counts."""
    sizes = budget_histories(lambda n: exact(prefix(turns, n)), len(turns), window, count)
    counts = budget_counts(exact, backend, turns, sizes)
    requests = [prefix(turns, n) for n in sizes]
    counter = TokenCounter(RoughBackend(), cache_size=0)
    counts["rough_margin"] = [counter.count_chat(r) for r in requests]
    rows: dict[str, Any] = {"requests": len(requests), "window": window,
                            "sweep": sweep(estimated_parts([prefix(turns, n) for n in range(1, max(sizes) + 1)],
                                                           exact))}
    asks_all = OutputCap("max_tokens", window)  # each request asks for the whole window (Hermes' 65,536 default)
    for key, values in counts.items():
        budgets = [apply_output(r, v, Limits.of_window(window, 4096, 1024), cap=asks_all)[0]
                   for r, v in zip(requests, values)]
        rows[key] = {
            "budgeted": sum(1 for b in budgets if b.action == "lower_cap_to"),
            "overflows": sum(1 for r, b in zip(requests, budgets)
                             if b.action == "lower_cap_to" and exact(r) + b.value > window),  # type: ignore[operator]
            "error_median_percent": statistics.median(error_percent(v, exact(r)) for r, v in zip(requests, values)),
        }
    return rows


def tokenizers() -> dict[str, tuple[TokenizerBackend, Exact]]:
    from batontest.assets import qwen3_dir, tiktoken_encoding_file

    from baton_engine.tokens.contract import TokenizerConfig
    from baton_engine.tokens.plugins import build_backend

    backends = {
        "qwen3": build_backend(TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B"))[0],
        "o200k": build_backend(TokenizerConfig(backend="tiktoken", model="gpt-4o",
                                               path=str(tiktoken_encoding_file("o200k_base"))))[0],
    }
    out = {}
    for name, backend in backends.items():
        judge = TokenCounter(backend, cache_size=8192)

        def exact(request: Request, judge: TokenCounter = judge) -> int:
            counted = judge.count_chat(request)
            if counted.tokens is None or counted.fallback_reason is not None:
                raise RuntimeError(f"reference count failed ({counted.source})")
            return counted.tokens

        out[name] = (backend, exact)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    budget_turns = workload.session_of_turns(600, scale=0.3).turns[::-1]  # run.py's budget requests
    results = {}
    for name, (backend, exact) in tokenizers().items():
        results[name] = {"growing": growing(exact, backend, 20 if quick else 60),
                         "budgets": budget_rows(exact, backend, budget_turns, 65536, 10 if quick else 60)}
        print(f"{name}: done", flush=True)
    return {"share": DEFAULT_MARGIN_SHARE, "floor": DEFAULT_MARGIN_FLOOR_TOKENS, "tokenizers": results}


def render(results: dict[str, Any]) -> list[str]:
    """Markdown lines for the report (also printed when run on its own)."""
    out = [f"## Usage-anchored counting (k = {results['share']}, floor = {results['floor']} tokens)", "",
           "Estimate = anchor exact + ratio * rough(appended) + margin, anchor = the provider's usage of the request "
           "before; error = (estimate - exact) / exact, positive = over-count. Budgets: max_tokens = W - estimate.",
           ""]
    out += ["| tokenizer | error after 1 / 5 / 20 responses (median, min..max over 6 sessions) | all anchored "
            "requests: median (min..max), undercounts | tokenizer lost halfway | history rewritten |",
            "|---|---|---|---|---|"]
    for name, data in results["tokenizers"].items():
        g = data["growing"]
        after = " / ".join(f"{v['median']:+.1f}% ({v['min']:+.1f}..{v['max']:+.1f})"
                           for v in g["after_responses"].values())
        usage, lost, rewrite = g["usage_error"], g["lost_error"], g["rewrite_error"]
        out.append(f"| {name} | {after} | {usage['median']:+.1f}% ({usage['min']:+.1f}..{usage['max']:+.1f}), "
                   f"{g['usage_undercounts']} of {g['requests']} | {lost['median']:+.1f}% "
                   f"({lost['min']:+.1f}..{lost['max']:+.1f}), {g['lost_undercounts']} under | "
                   f"{rewrite['median']:+.1f}% ({rewrite['min']:+.1f}..{rewrite['max']:+.1f}), "
                   f"{g['rewrite_undercounts']} under |")
    out += ["", "| tokenizer | (a) tokenizer lost halfway | (b) provider usage only | (c) rough + 1024 |",
            "|---|---|---|---|"]
    for name, data in results["tokenizers"].items():
        b = data["budgets"]
        cells = [f"{b[key]['overflows']} of {b[key]['budgeted']} overflow (median error "
                 f"{b[key]['error_median_percent']:+.1f}%)" for key in ("anchored_lost", "anchored_usage",
                                                                         "rough_margin")]
        out.append(f"| {name} ({b['requests']} budgets) | " + " | ".join(cells) + " |")
    out += ["", "Smallest margin share k with no undercount (per floor), over every anchored model call of the "
            "growing sessions, and over the whole-turn steps of the budget session:", ""]
    for name, data in results["tokenizers"].items():
        for what, s in (("model calls", data["growing"]["sweep"]), ("whole turns", data["budgets"]["sweep"])):
            out.append(f"- {name}, {what} ({s['requests']} requests): " + ", ".join(
                f"floor {f}: k >= {v['k_needed']:.3f}" for f, v in s["floors"].items()))
    out += ["", f"Ratio = max exact/rough over the last {RECENT_OBSERVATIONS} observations; k needed (floor "
            f"{results['floor']}) with other memories: " + "; ".join(
                f"{name}: " + ", ".join(f"last {n}: {k:.3f}" for n, k in data["growing"]["k_needed_by_recent"].items())
                for name, data in results["tokenizers"].items())]
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("baton_engine.tokens").setLevel(logging.ERROR)  # one fallback line per simulated count
    print("\n".join(render(run(args.quick))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
