"""Per-turn overhead at long histories: Baton's work per API call from 200 to 4,000 messages of history.

The work Hermes 0.19.0's loop asks for (the pre-API estimate, should_compress, the llm_request middleware), beside
Hermes' own rough estimate and the floor of one value comparison of the history. Run by ``benchmarks/run.py``."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import plots, workload
from benchmarks.harness.judge import MODEL, SYSTEM, Judge
from benchmarks.harness.markdown_table import markdown_table
from benchmarks.harness.percentiles import percentile
from benchmarks.harness.targets import Target, verdict

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "per-turn overhead 3.3 -> 16.5 ms per API call at 200 -> 4,000 messages (5.0x)",
    "target": "p50 within 3x from 200 to 4,000 messages (NOT met)",
    "findings": 4,
    "test": "tests/bench/test_quick_run.py",
}



def measure(judge: Judge, runtime: Any, session: workload.Session, sizes: list[int],
            turns: int) -> list[dict[str, Any]]:
    """Baton's work per API call, as Hermes 0.19.0's loop does it: the pre-API estimate of the api messages
    (the patched ``estimate_messages_tokens_rough``), ``should_compress`` with that estimate, then the
    ``llm_request`` middleware on the request carrying the same api messages. Hermes builds those messages
    afresh per call (its own work, done outside the timed part here): copies of the stored ones, with the
    bookkeeping keys stripped and tool-call arguments normalised, which is what ``_sent_message`` does."""
    from agent.model_metadata import estimate_messages_tokens_rough, estimate_request_tokens_rough

    from baton_engine.agent.runtime import set_runtime
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.hermes.patches import Activation, ExactEstimators
    from baton_engine.hermes.request_view import _sent_message
    from baton_engine.tokens.contract import plain_copy
    from batontest.agent_frames import LoopAgent, in_agent

    set_runtime(runtime)
    all_messages = session.messages()
    estimate = ExactEstimators().messages_tokens(estimate_messages_tokens_rough)
    rows = []
    for size in sizes:
        engine = BatonContextEngine(project_dir=Path(tempfile.mkdtemp(prefix="baton-bench-empty-")))
        engine.update_model(MODEL, 10_000_000)
        activation = Activation()
        activation.active = True  # the middleware without Hermes' module patches
        agent = LoopAgent(engine, workload.TOOLS)
        stored = [SYSTEM, *all_messages[: size - turns]]
        earlier = [_sent_message(m) for m in stored]
        runtime.count_chat({"messages": earlier, "tools": workload.TOOLS})  # the earlier turns: counted,
        while engine.scan_ahead.upto < len(earlier):  # and scanned ahead (as their own requests did)
            engine.prepare_compaction(earlier)
        baton, hermes, compare = [], [], []
        api_messages = earlier
        for message in all_messages[size - turns: size]:
            snapshot = plain_copy(api_messages)  # what a memo keeps of the last request
            stored = [*stored, message]
            api_messages = [_sent_message(m) for m in stored]  # Hermes' per-call copies
            request = {"model": MODEL, "messages": api_messages, "tools": workload.TOOLS, "max_tokens": 4096}
            started = time.perf_counter()
            tokens = in_agent(agent, estimate, api_messages)
            engine.should_compress(tokens)
            in_agent(agent, activation.llm_request, request=request, model=MODEL)  # from the agent's loop
            baton.append(time.perf_counter() - started)
            started = time.perf_counter()
            estimate_request_tokens_rough(stored[1:], system_prompt=SYSTEM["content"], tools=workload.TOOLS)
            hermes.append(time.perf_counter() - started)
            started = time.perf_counter()
            same = snapshot == api_messages[:len(snapshot)]  # the floor: ONE value comparison of the history
            compare.append(time.perf_counter() - started)
            assert same
        rows.append({"messages": size, "tokens": judge.tokens(all_messages[:size]),
                     "baton_p50_ms": 1000 * statistics.median(baton), "baton_p95_ms": 1000 * percentile(baton, 0.95),
                     "hermes_rough_p50_ms": 1000 * statistics.median(hermes),
                     "compare_p50_ms": 1000 * statistics.median(compare)})
        print(f"overhead at {size} messages: baton {rows[-1]['baton_p50_ms']:.1f} ms", flush=True)
    return rows


def _flat(overhead: list[dict[str, Any]]) -> tuple[float, bool]:
    """Growth of the per-turn p50 from the shortest to the longest history, and whether it counts as flat."""
    growth = overhead[-1]["baton_p50_ms"] / max(overhead[0]["baton_p50_ms"], 1e-9)
    return growth, growth <= 3


def targets(overhead: list[dict[str, Any]]) -> list[Target]:
    return [
        (f"per-turn overhead flat (history {overhead[0]['messages']} -> {overhead[-1]['messages']} messages, "
         "p50 within 3x)", _flat(overhead)[1],
         f"{overhead[0]['baton_p50_ms']:.1f} -> {overhead[-1]['baton_p50_ms']:.1f} ms"),
    ]


def plot(overhead: list[dict[str, Any]], out: Path) -> list[str]:
    figure, axis = plots.figure(7)
    history = [r["messages"] for r in overhead]
    axis.plot(history, [r["baton_p50_ms"] for r in overhead], marker="o", label="Baton p50 (pre-API estimate + should_compress + middleware)")
    axis.plot(history, [r["baton_p95_ms"] for r in overhead], marker=".", linestyle="--", label="Baton p95")
    axis.plot(history, [r["hermes_rough_p50_ms"] for r in overhead], marker="s", label="Hermes rough estimate p50")
    axis.axhline(3 * overhead[0]["baton_p50_ms"], color="grey", linestyle=":", label="flat target: 3x the shortest")
    axis.set_xscale("log")
    return [plots.saved(figure, axis, out / "overhead_vs_history.png", "history (messages)", "ms per turn",
                         "Per-turn counting overhead by history length")]


def render(overhead: list[dict[str, Any]]) -> list[str]:
    growth, flat = _flat(overhead)
    out = ["## Per-turn overhead (pre-API estimate + should_compress + llm_request middleware)", "",
           "Baton's work per API call as Hermes 0.19.0's loop asks for it: the patched pre-API estimate of the api "
           "messages (the count, and the scan ahead of the message it has not seen), `should_compress` with that "
           "number, the `llm_request` middleware on the request. One new message per turn on a long history "
           "(counter warm for the earlier history), median of 20 turns; Hermes builds its api messages afresh per "
           "call (outside the timing). Hermes' own rough request estimate shown for scale. Flat here means the p50 "
           "at the longest history is "
           f"within 3x of the shortest. Target flat: {verdict(flat)} "
           f"(p50 at {overhead[-1]['messages']} messages is {growth:.1f}x "
           f"that at {overhead[0]['messages']}).", ""]
    out += ["Baton cannot tell that the host's messages did not change without looking at them: Hermes hands a "
            "fresh copy of every message on every call, and dicts can be edited in place. The last column is the "
            "floor of that: ONE C-level value comparison of the history against a snapshot of the last request. "
            "Baton makes three per call (the estimate's projection memo, the hf backend's rendered-prefix check, "
            "the middleware's request-key memo); the counting itself re-renders only the last turns "
            "(`tokens_bench.py` rows in the Targets table).", ""]
    out += markdown_table(["history messages", "Qwen3 tokens", "Baton p50 ms", "Baton p95 ms",
                           "Hermes rough estimate p50 ms", "one value comparison of the history p50 ms"],
                          [[r["messages"], r["tokens"], f"{r['baton_p50_ms']:.1f}", f"{r['baton_p95_ms']:.1f}",
                            f"{r['hermes_rough_p50_ms']:.1f}",
                            f"{r['compare_p50_ms']:.2f}" if "compare_p50_ms" in r else "-"] for r in overhead])
    out += ["", "![per-turn overhead vs history](overhead_vs_history.png)", ""]
    return out
