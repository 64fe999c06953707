"""The growing session (600 turns, two requests a turn) at 16K and 64K: how often and how far each arm compacts.

Compactions, their gaps, the peak request, the compacted request against the trigger that fired, in-flight tool
results and why each compaction fired, for Baton's arms and Hermes' built-in. Run by ``benchmarks/run.py``;
``gap_bench.py`` runs it at one window."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

from batontest.model_server import ModelServer

from baton_engine.compaction.cycle import SessionFacts, first_unanswered
from baton_engine.messages.markers import STUB_PREFIX
from benchmarks.harness import arms, plots, workload
from benchmarks.harness.judge import MODEL, Judge, tool_pair_errors
from benchmarks.harness.markdown_table import markdown_table
from benchmarks.harness.projects import new_project
from benchmarks.harness.targets import Target
from benchmarks.host import memory_bench

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("every Baton compaction of the 600-turn runs at or below half the trigger that fired; "
               "every in-flight result verbatim when its group fits"),
    "target": "peak never above the window, no back-to-back compaction, post-compaction <= 50% of the trigger",
    "findings": 11,
    "test": "tests/bench/test_quick_run.py",
}


FALLBACK_ARM = "baton-fallback"  # fallback_token_threshold at half the threshold: the fallback is what fires
FALLBACK_SHARE = 2
TARGET_POST_SHARE = 0.5  # the compacted request at most half the trigger that fired


def block_tokens(judge: Judge, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    """Tokens of what a compaction added that was not in the transcript (Baton's block, Hermes' summary);
    rewritten tool results (stubs) are not part of it."""
    added = [m for m in after if m.get("role") != "tool" and m not in before]
    return judge.tokens(added) - judge.tokens([]) if added else 0


def inflight_fate(judge: Judge, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The unanswered tool-call group of ``before`` (None when there is none) and what a compaction made of
    its results: verbatim, replaced by Baton's stub, or dropped / rewritten."""
    start = first_unanswered(before)
    if start == len(before):
        return None
    kept = {m.get("tool_call_id"): m for m in after if m.get("role") == "tool"}
    results = [m for m in before[start + 1:] if m.get("role") == "tool"]
    verbatim = sum(1 for m in results if kept.get(m["tool_call_id"]) == m)
    stubbed = sum(1 for m in results if kept.get(m["tool_call_id"]) not in (None, m)
                  and str(kept[m["tool_call_id"]].get("content")).startswith(STUB_PREFIX))
    return {"results": len(results), "verbatim": verbatim, "stubbed": stubbed,
            "other": len(results) - verbatim - stubbed, "tokens": judge.tokens(before[start:]) - judge.tokens([])}


def measure(judge: Judge, runtimes: dict[str, Any], server: ModelServer, meter: arms.AuxiliaryMeter,
            session: workload.Session, windows: list[int], builtin: bool = True) -> list[dict[str, Any]]:
    """The growing session at each window, each Baton arm of ``runtimes`` and (``builtin``) Hermes' own."""
    runs = []
    fixed = judge.tokens([])  # system prompt + tool schemas
    growth = judge.tokens(session.messages()) - fixed  # everything the session adds to the request
    for window in windows:
        for label in [*runtimes, *(["hermes-builtin"] if builtin else [])]:
            if label == "hermes-builtin":
                arm: Any = arms.HermesArm(server.base_url, MODEL, window, meter)
            else:
                arm = arms.BatonArm(label, new_project(session), runtimes[label], window)
                if label == FALLBACK_ARM:
                    arm.set_fallback(arm.threshold_tokens // FALLBACK_SHARE)
            trigger = arm.trigger_tokens
            room = int(trigger * TARGET_POST_SHARE) - fixed - SessionFacts.max_block_tokens  # in-flight fits in this
            history: list[dict[str, Any]] = []
            rss_before = memory_bench.rss_bytes()
            sent, compactions, pair_errors, after_tokens, seconds, llm_calls = [], [], 0, [], 0.0, 0
            fired: list[int] = []  # the trigger each compaction fired at (a trigger below the floor is raised)
            blocks: list[int] = []
            inflight: list[dict[str, Any]] = []
            triggers: dict[str, int] = {}

            def request(turn_no: int) -> None:
                nonlocal history, pair_errors, seconds, llm_calls
                prompt = judge.tokens(history)
                if arm.observe(prompt):
                    reason = re.sub(r"[\d.]+", "N", str(getattr(arm.engine, "last_decision", "threshold")))
                    triggers[reason] = triggers.get(reason, 0) + 1
                    before = history
                    fired.append(arm.trigger_tokens)
                    history, stats = arm.compress(history, prompt)
                    seconds += stats.seconds - stats.llm_seconds
                    llm_calls += stats.llm_calls
                    compactions.append(turn_no)
                    prompt = judge.tokens(history)
                    after_tokens.append(prompt)
                    blocks.append(block_tokens(judge, before, history))
                    fate = inflight_fate(judge, before, history)
                    if fate is not None:
                        inflight.append({**fate, "fits": fate["tokens"] <= room})
                pair_errors += tool_pair_errors(history)
                arm.send(judge.request(history) | {"model": MODEL, "max_tokens": 4096}, prompt)
                sent.append([turn_no, prompt])

            for turn in session.turns:
                messages = [json.loads(json.dumps(m)) for m in turn.messages]
                history.append(messages[0])
                request(turn.index)  # the request carrying the user message
                history.extend(messages[1:-1])
                arm.capture(turn.captures, history)
                request(turn.index)  # the request after the tool results
                history.append(messages[-1])
            gaps = [b - a for a, b in zip(compactions, compactions[1:])]
            next_turn = statistics.median(
                [judge.tokens(list(t.messages)) - judge.tokens([]) for t in session.turns[:50]])
            risky = sum(1 for a in after_tokens if arm.threshold_tokens - a <= next_turn)
            peak = max(p for _, p in sent)
            shares = [a / at for a, at in zip(after_tokens, fired)]
            block = statistics.median(blocks) if blocks else 0
            runs.append({
                "arm": label, "window": window, "threshold": arm.threshold_tokens, "trigger": trigger,
                "turns": len(session.turns),
                "requests": len(sent), "compactions": len(compactions), "peak": peak, "final": sent[-1][1],
                "over_window": sum(1 for _, p in sent if p > window),
                "over_threshold": sum(1 for _, p in sent if p > arm.threshold_tokens),
                "min_gap_turns": min(gaps) if gaps else None,
                "median_gap_turns": statistics.median(gaps) if gaps else None,
                "back_to_back": sum(1 for g in gaps if g <= 1), "repeat_risk": risky, "next_turn_tokens": next_turn,
                "tool_pair_errors": pair_errors, "compress_seconds": seconds, "llm_calls": llm_calls,
                "degraded": arm.engine.compaction.degraded_count if isinstance(arm, arms.BatonArm) else None,
                "series": sent, "triggers": triggers,
                "rss_before": rss_before, "rss_after": memory_bench.rss_bytes(),
                "post_share_median": statistics.median(shares) if shares else None,
                "post_share_max": max(shares) if shares else None,
                "raised": any(at > trigger for at in fired),  # compacted at the floor, above the configured trigger
                "fixed": fixed, "block_median": block, "growth": growth,
                "physical_minimum": growth / max(trigger - fixed - block, 1),
                "inflight": inflight, "inflight_room": room,
            })
            print(f"window {window} {label}: {len(compactions)} compactions (physical minimum "
                  f"{runs[-1]['physical_minimum']:.1f}), peak {peak}, post/trigger max "
                  f"{runs[-1]['post_share_max'] or 0:.0%}, in-flight groups {len(inflight)}", flush=True)
    return runs


def targets(results: dict[str, Any]) -> list[Target]:
    """The long session's rows; the first counts the pair errors of every Baton output, ``compress_bench``'s too."""
    baton_sizes = [r for r in results["sizes"] if r["arm"].startswith("baton")]
    baton_long = [r for r in results["long"] if r["arm"].startswith("baton")]
    return [
        ("0 tool-pair errors (all Baton outputs, all sizes and both long sessions)",
         sum(r["tool_pair_errors"] for r in baton_sizes + baton_long) == 0,
         f"{sum(r['tool_pair_errors'] for r in baton_sizes + baton_long)} errors"),
        ("peak prompt tokens never above the window (600-turn runs)", all(r["over_window"] == 0 for r in baton_long),
         ", ".join(f"{r['arm']}@{r['window'] // 1024}K peak {r['peak']}" for r in baton_long)),
        ("no every-turn compaction (600-turn runs)", all(r["back_to_back"] == 0 for r in baton_long),
         ", ".join(f"{r['arm']}@{r['window'] // 1024}K min gap {r['min_gap_turns']} turns" for r in baton_long)),
        ("post-compaction request <= 50% of the trigger that fired (every Baton compaction, 600-turn runs)",
         all(r["post_share_max"] is None or r["post_share_max"] <= (0.99 if r.get("raised") else 0.5)
             for r in baton_long),
         ", ".join(f"{r['arm']}@{r['window'] // 1024}K max {_pct(r['post_share_max'])}"
                   + (" (trigger raised to the floor: below it, results not yet answered kept whole)"
                      if r.get("raised") else "") for r in baton_long)),
        ("compactions at most 2x the physical minimum (follows from the 50% target; 600-turn runs)",
         all(r["compactions"] <= 2 * r["physical_minimum"] for r in baton_long),
         ", ".join(f"{r['arm']}@{r['window'] // 1024}K {r['compactions']} vs {r['physical_minimum']:.1f}"
                   for r in baton_long)),
        ("in-flight results kept verbatim whenever their group fits, never dropped (600-turn runs)",
         all(_inflight(r)["misses"] == 0 for r in baton_long),
         ", ".join(f"{r['arm']}@{r['window'] // 1024}K {_inflight(r)['verbatim']}/{_inflight(r)['results']} "
                   f"verbatim, {_inflight(r)['stubbed']} stubbed" for r in baton_long)),
    ]


def plot(long_runs: list[dict[str, Any]], out: Path) -> list[str]:
    names = []
    for window in sorted({r["window"] for r in long_runs}):
        figure, axis = plots.figure(8)
        for run in [r for r in long_runs if r["window"] == window]:
            series = run["series"]
            axis.plot([i / 2 for i in range(len(series))], [p for _, p in series], linewidth=0.8,
                      label=f"{run['arm']} ({run['compactions']} compactions)")
        axis.axhline(window, color="red", linestyle="--", label=f"window {window}")
        names.append(plots.saved(figure, axis, out / f"tokens_over_turns_{window // 1024}k.png", "turn",
                                 "prompt tokens sent (Qwen3)",
                                 f"Prompt tokens over a {long_runs[0]['turns']}-turn session, {window // 1024}K window"))
    return names


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _inflight(run: dict[str, Any]) -> dict[str, int]:
    """Totals over a run's compactions that had an unanswered tool-call group; a miss is a group that fit
    its room (half the trigger less the fixed part and the block budget) but lost a result, or any result
    dropped or rewritten other than by Baton's stub."""
    groups = run["inflight"]
    totals = {k: sum(g[k] for g in groups) for k in ("results", "verbatim", "stubbed", "other")}
    misses = sum(1 for g in groups if g["other"] or (g["fits"] and g["verbatim"] < g["results"]))
    return {"groups": len(groups), **totals, "misses": misses}


def render(long_runs: list[dict[str, Any]]) -> list[str]:
    baton_long = [r for r in long_runs if r["arm"].startswith("baton")]
    out = [f"## The growing {long_runs[0]['turns']}-turn session", "",
           "Two requests per turn (after the user message, after the tool results), each checked with "
           "should_compress first. Repeat risk = compactions whose headroom (threshold - tokens after) was at most "
           "one "
           f"typical turn ({long_runs[0]['next_turn_tokens']} tokens).", ""]
    out += markdown_table(["window", "arm", "threshold", "compactions", "peak", "final", "requests > window",
                           "requests > threshold", "min / median gap (turns)", "back-to-back", "repeat risk",
                           "pair errors", "local compress s", "LLM calls", "degraded"],
                          [[r["window"], r["arm"], r["threshold"], r["compactions"], r["peak"], r["final"],
                            r["over_window"], r["over_threshold"], f"{r['min_gap_turns']} / {r['median_gap_turns']}",
                            r["back_to_back"],
                            r["repeat_risk"], r["tool_pair_errors"], f"{r['compress_seconds']:.1f}", r["llm_calls"],
                            r["degraded"]] for r in long_runs])
    out += ["", "After each compaction: the request's size against the trigger that fired (target <= 50%), and the "
            "compactions next to the physical minimum for the workload = total growth / (trigger - fixed part), the "
            "fixed part being system prompt + tool schemas + the block the compaction added (Baton's handoff "
            "block, Hermes' summary; median over the run). `baton-fallback` sets `fallback_token_threshold` to half "
            "the threshold. In-flight = compactions with an unanswered tool-call group (the request after the "
            "tool results): its results verbatim in the compacted list, replaced by Baton's stub, or dropped / "
            "rewritten; a group fits when it is at most half the trigger less the fixed part and the block "
            "budget.", ""]
    out += markdown_table(["window", "arm", "trigger", "post / trigger median", "post / trigger max",
                           "fixed + block", "growth", "compactions", "physical minimum",
                           "in-flight groups (fitting the room, tokens)", "results verbatim", "stubbed",
                           "dropped / rewritten", "misses"],
                          [[r["window"], r["arm"], r["trigger"], _pct(r["post_share_median"]),
                            _pct(r["post_share_max"]), f"{r['fixed']} + {r['block_median']:.0f}", r["growth"],
                            r["compactions"], f"{r['physical_minimum']:.1f}",
                            f"{_inflight(r)['groups']} ({sum(g['fits'] for g in r['inflight'])} "
                            f"within {r['inflight_room']})",
                            f"{_inflight(r)['verbatim']}/{_inflight(r)['results']}", _inflight(r)["stubbed"],
                            _inflight(r)["other"], _inflight(r)["misses"]] for r in long_runs])
    out += ["", "Why Baton compacted (engine's `last_decision`, numbers masked): "
            + "; ".join(f"{r['arm']}@{r['window'] // 1024}K "
                        + ", ".join(f"{n}x {k}" for k, n in r.get("triggers", {}).items())
                        for r in baton_long) + "."]
    windows = sorted({r["window"] for r in long_runs})
    out += [""] + [f"![tokens over turns](tokens_over_turns_{window // 1024}k.png)" for window in windows] + [""]
    return out
