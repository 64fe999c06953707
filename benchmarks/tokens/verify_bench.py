"""Counts the provider confirms: Baton's count of each request against the size the provider reports for it.

    .venv/bin/python benchmarks/tokens/verify_bench.py [--quick]

The "provider" is a Qwen3 server: its reported ``prompt_tokens`` is the real Qwen3 tokenizer's count (hf
backend, chat template, ``assets/tokenizers/qwen3``) of the request as the server renders it. Baton counts each
request with one arm's tokenizer:

- ``right``: the same Qwen3 hf backend and template kwargs;
- ``wrong family``: tiktoken o200k;
- ``kwargs``: Qwen3 without the server's ``chat_template_kwargs`` (the server renders
  ``enable_thinking: false``, a default set on the server Baton does not see); ``kwargs reversed``: Baton
  counts with it, the server without.

Each arm runs the same long sessions (``benchmarks/harness/workload.py``'s tool-heavy turns, every model call of Hermes'
loop, the history replaced by a brief + recent tail at a few fixed points) through one ``RouteCheck``, as the
engine does: ``adjust`` the count, send, ``observe(count, reported)``. The strict server refuses any request
whose reported prompt + output cap exceeds its window W; the cap is ``budget.apply_output``'s with the request
asking for the whole window and the route's unconfirmed margin. W puts the largest request at ``FILL`` of the
window, so the last requests before each rewrite get short caps (the tightest case).
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
from baton_engine.tokens.contract import TokenCount  # noqa: E402
from baton_engine.tokens.counter import TokenCounter  # noqa: E402
from baton_engine.tokens.verify import (  # noqa: E402
    CALIBRATED_MARGIN_FLOOR,
    CALIBRATED_MARGIN_SHARE,
    RECENT,
    TOLERANCE_SHARE,
    TOLERANCE_TOKENS,
    UNCONFIRMED_SHARE,
    RouteCheck,
)

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("0 overflows in every arm (right tokenizer, o200k for Qwen3, template kwargs both "
               "ways); a wrong family calibrated on its first response"),
    "target": "0 overflows with UNCONFIRMED_SHARE 0.5",
    "findings": "Counts the provider confirms",
    "test": "tests/bench/test_verify_bench.py",
}

Message = dict[str, Any]
Request = dict[str, Any]
Count = Callable[[Request], TokenCount]
SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}
SERVER_KWARGS = {"enable_thinking": False}
SEEDS = (11, 5, 3)
FILL = 0.95  # the largest reported prompt of a session, as a share of the window
MIN_OUTPUT, FALLBACK_MARGIN = 4096, 1024
TAIL = 4  # messages kept verbatim by a rewrite


def request_of(history: Sequence[Message], kwargs: dict[str, Any] | None = None) -> Request:
    request: Request = {"messages": [SYSTEM, *history], "tools": workload.TOOLS}
    if kwargs:
        request["chat_template_kwargs"] = dict(kwargs)
    return request


def rewritten(history: Sequence[Message]) -> list[Message]:
    """A compaction-like rewrite: a brief made of the old messages' openings, then the recent tail verbatim."""
    old, tail = history[:-TAIL], history[-TAIL:]
    while tail and tail[0].get("role") == "tool":  # the tail starts at a whole exchange
        old, tail = [*old, tail[0]], tail[1:]
    brief = "[Baton resume brief]\n" + "\n".join(str(m.get("content"))[:400] for m in old)[:4800]
    return [{"role": "user", "content": brief}, *tail]


def session_histories(turns: int, seed: int, rewrites: int) -> tuple[list[list[Message]], set[int]]:
    """Every model call's history (the one with the user message, the one after the tool results, per turn),
    the history rewritten before ``rewrites`` evenly spaced turns; and the indexes of the first request after
    each rewrite."""
    session = workload.session_of_turns(turns, seed=seed, scale=0.3)
    every = turns // (rewrites + 1)
    histories: list[list[Message]] = []
    after_rewrite: set[int] = set()
    history: list[Message] = []
    for turn in session.turns:
        if turn.index and turn.index % every == 0 and len(after_rewrite) < rewrites:
            history = rewritten(history)
            after_rewrite.add(len(histories))
        messages = list(turn.messages)
        history.append(messages[0])
        histories.append(list(history))
        history.extend(messages[1:-1])
        histories.append(list(history))
        history.append(messages[-1])
    return histories, after_rewrite


def counters() -> dict[str, Count]:
    from batontest.assets import qwen3_dir, tiktoken_encoding_file

    from baton_engine.tokens.contract import TokenizerConfig
    from baton_engine.tokens.plugins import build_backend

    qwen3 = build_backend(TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B"))[0]
    o200k = build_backend(TokenizerConfig(backend="tiktoken", model="gpt-4o",
                                          path=str(tiktoken_encoding_file("o200k_base"))))[0]
    out = {}
    for name, backend in (("qwen3", qwen3), ("o200k", o200k)):
        counter = TokenCounter(backend, cache_size=8192)

        def count(request: Request, counter: TokenCounter = counter) -> TokenCount:
            counted = counter.count_chat(request)
            if counted.tokens is None or counted.fallback_reason is not None:
                raise RuntimeError(f"count failed ({counted.source}): the benchmark needs the real tokenizers")
            return counted

        out[name] = count
    return out


def arms() -> dict[str, tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """Arm -> (Baton's tokenizer, the kwargs Baton counts with, the kwargs the server renders with)."""
    return {"right": ("qwen3", None, None),
            "wrong family": ("o200k", None, None),
            "kwargs": ("qwen3", None, SERVER_KWARGS),
            "kwargs reversed": ("qwen3", SERVER_KWARGS, None)}


def run_arm(histories: Sequence[list[Message]], window: int, baton: Count, provider: Count,
            baton_kwargs: dict[str, Any] | None, server_kwargs: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One route over one session: per request Baton's raw count, the adjusted count, the reported size, the
    verdict it was budgeted under, the cap and whether the strict server refused it."""
    check = RouteCheck()
    rows = []
    for history in histories:
        request = request_of(history, baton_kwargs)
        raw = baton(request)
        adjusted = check.adjust(raw)
        verdict = check.verdict
        cap = _cap(request, raw, window, check)
        reported = provider(request_of(history, server_kwargs)).tokens
        first_cap = _cap(request, raw, window, RouteCheck())  # as if the route were new here (a model switch)
        rows.append({"raw": raw.tokens, "adjusted": adjusted.tokens, "reported": reported, "verdict": verdict,
                     "scaled": math.ceil(check.ratio * raw.tokens),  # type: ignore[operator]
                     "cap": cap,
                     "overflow": cap is not None and reported + cap > window,  # type: ignore[operator]
                     "first_overflow": first_cap is not None and reported + first_cap > window})
        check.observe(raw, reported)  # the response's usage.prompt_tokens, as the engine feeds it
    rows[-1]["calibrated_at"] = check.calibrated_at
    return rows


def _cap(request: Request, raw: TokenCount, window: int, check: RouteCheck) -> int | None:
    """The output cap Baton writes for this request on this route (None: none, the prompt needs compaction)."""
    decision, _ = apply_output({**request, "max_tokens": window}, check.adjust(raw),
                               Limits.of_window(window, MIN_OUTPUT, FALLBACK_MARGIN), cap=OutputCap("max_tokens", window),
                               unconfirmed_margin=check.output_margin(raw))
    return decision.value if decision.action == "lower_cap_to" else None


def spread(values: Sequence[float]) -> float:
    return max(values) / min(values) if values else 1.0


def summarise(sessions: Sequence[tuple[list[dict[str, Any]], set[int]]]) -> dict[str, Any]:
    """Per arm over every session: the figures each default of ``tokens.verify`` is chosen from."""
    rows = [r for session, _ in sessions for r in session]
    before = [r["reported"] - r["raw"] for r in rows if r["verdict"] == "unconfirmed"]
    after = [r for r in rows if r["verdict"] != "unconfirmed"]
    calibrated = [r for r in rows if r["verdict"] == "calibrated"]
    ratios = [r["reported"] / r["raw"] for r in rows]
    # the margin share each calibrated request needed on top of ratio * raw + floor (negative: none)
    needed = [(r["reported"] - r["scaled"] - CALIBRATED_MARGIN_FLOOR) / r["scaled"] for r in calibrated]
    rewrite_under = [s[i]["reported"] - s[i]["adjusted"] for s, starts in sessions for i in starts]
    return {
        "requests": len(rows), "sessions": len(sessions),
        "calibrated_at": [s[-1]["calibrated_at"] for s, _ in sessions],
        "before_gap": before,
        "after_under_max": max((r["reported"] - r["adjusted"] for r in after), default=0),
        "after_under_median": statistics.median(r["reported"] - r["adjusted"] for r in after) if after else 0,
        "after_over_median_share": (statistics.median((r["adjusted"] - r["reported"]) / r["reported"] for r in after)
                                    if after else 0.0),
        "rewrite_under_max": max(rewrite_under, default=0),
        "overflows": sum(r["overflow"] for r in rows),
        "short_caps": sum(1 for r in rows if r["cap"] is not None and r["cap"] < MIN_OUTPUT),
        "needs_compaction": sum(1 for r in rows if r["cap"] is None),
        "first_overflows": sum(r["first_overflow"] for r in rows),
        "first_share_max": max((r["reported"] - r["raw"]) / r["raw"] for r in rows),
        "ratio_min": min(ratios), "ratio_max": max(ratios), "ratio_spread": spread(ratios),
        "recent_drift": max(_recent_drift(s) for s, _ in sessions),
        "share_needed": max(needed, default=0.0),
        "gap_abs_min": min(abs(r["reported"] - r["raw"]) for r in rows),
        "gap_abs_max": max(abs(r["reported"] - r["raw"]) for r in rows),
        "first_share": [(s[0]["reported"] - s[0]["raw"]) / s[0]["raw"] for s, _ in sessions],
    }


def _recent_drift(session: Sequence[dict[str, Any]]) -> float:
    """The largest ratio of a request over the largest of the RECENT before it (what the margin must cover)."""
    ratios = [r["reported"] / r["raw"] for r in session]
    return max((ratios[i] / max(ratios[max(0, i - RECENT):i]) for i in range(1, len(ratios))), default=1.0)


def run(quick: bool = False) -> dict[str, Any]:
    count = counters()
    seeds, turns, rewrites = (SEEDS[:1], 25, 1) if quick else (SEEDS, 60, 3)
    sessions = []
    for seed in seeds:
        histories, starts = session_histories(turns, seed, rewrites)
        largest = max(count["qwen3"](request_of(h, kw)).tokens for h in histories  # type: ignore[type-var]
                      for kw in (None, SERVER_KWARGS))
        sessions.append((histories, starts, math.ceil(largest / FILL)))
    results = {}
    for arm, (tokenizer, baton_kwargs, server_kwargs) in arms().items():
        runs = [(run_arm(h, w, count[tokenizer], count["qwen3"], baton_kwargs, server_kwargs), s)
                for h, s, w in sessions]
        results[arm] = summarise(runs)
        print(f"{arm}: done", flush=True)
    return {"windows": [w for _, _, w in sessions], "seeds": list(seeds), "turns": turns, "rewrites": rewrites,
            "arms": results}


def _median_max(values: Sequence[int]) -> str:
    return f"{statistics.median(values):,.0f} / {max(values):,}" if values else "-"


def render(results: dict[str, Any]) -> list[str]:
    """Markdown lines for the report (also printed when run on its own)."""
    arms_ = results["arms"]
    out = [f"## Counts the provider confirms (`benchmarks/tokens/verify_bench.py`: tolerance {TOLERANCE_TOKENS} tokens / "
           f"{TOLERANCE_SHARE:.1%}, calibrated margin {CALIBRATED_MARGIN_SHARE:.0%} + {CALIBRATED_MARGIN_FLOOR}, "
           f"unconfirmed {UNCONFIRMED_SHARE:.0%})", "",
           f"Provider: Qwen3 (hf, chat template). {len(results['seeds'])} sessions of {results['turns']} tool-heavy "
           f"turns (every model call), history rewritten {results['rewrites']}x per session; strict windows "
           f"{', '.join(f'{w:,}' for w in results['windows'])} (largest prompt = {FILL:.0%}). Gap = reported - "
           f"counted (positive = Baton undercounts). Overflow = reported + cap > W.", "",
           "| arm | requests | calibrated after (requests) | gap before calibration median / max | undercount "
           "after (reported - adjusted) median / max | first after a rewrite, max | adjusted over reported, median "
           "| overflows | short caps | needs compaction | ratio reported/raw min..max (spread) | overflows if each "
           "request were its route's first |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for arm, a in arms_.items():
        at = ", ".join("never" if n is None else str(n) for n in a["calibrated_at"])
        out.append(f"| {arm} | {a['requests']} | {at} | {_median_max(a['before_gap'])} | "
                   f"{a['after_under_median']:,.0f} / {a['after_under_max']:,} | {a['rewrite_under_max']:,} | "
                   f"{a['after_over_median_share']:+.2%} | **{a['overflows']}** | {a['short_caps']} | "
                   f"{a['needs_compaction']} | {a['ratio_min']:.4f}..{a['ratio_max']:.4f} "
                   f"({a['ratio_spread']:.4f}) | {a['first_overflows']} |")
    wrong = {k: v for k, v in arms_.items() if k != "right"}
    out += ["", "Figures the defaults of `tokens/verify.py` are chosen from:", "",
            f"- tolerance: largest |reported - raw| of the right tokenizer {arms_['right']['gap_abs_max']}; smallest "
            "of the wrong arms: " + ", ".join(f"{k} {v['gap_abs_min']:,} (largest {v['gap_abs_max']:,})"
                                              for k, v in wrong.items()),
            "- calibrated margin share: ratio drift over the recent maximum (a request's ratio / the largest of the "
            f"{RECENT} before it), worst: " + ", ".join(f"{k} {v['recent_drift']:.4f}" for k, v in wrong.items())
            + "; share needed on top of ratio * raw + floor by the worst calibrated request: "
            + ", ".join(f"{k} {v['share_needed']:+.4f}" for k, v in wrong.items() if v["calibrated_at"] != [None]
                        * len(v["calibrated_at"])),
            "- unconfirmed share: the first request's (reported - raw) / raw: " + ", ".join(
                f"{k} " + " / ".join(f"{s:+.2%}" for s in v["first_share"]) for k, v in arms_.items())
            + "; largest over every request (a route new mid-session): " + ", ".join(
                f"{k} {v['first_share_max']:+.2%}" for k, v in arms_.items())]
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("baton_engine.tokens").setLevel(logging.ERROR)
    print("\n".join(render(run(args.quick))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
