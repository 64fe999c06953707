"""Head-to-head benchmark: Baton vs Hermes' built-in compressor vs incontext, in one process, one run.

    python benchmarks/run.py [--quick] [--out benchmarks/results]

Needs hermes-agent==0.19.0, incontext==0.0.5 and matplotlib next to the project (``scripts/bench.sh``
builds that venv). Writes ``results.json`` (raw, gitignored), then ``report/render.py`` turns it into
``REPORT.md`` + PNG plots. Everything is offline: tokenizers come from the repository's assets, the
model and /tokenize endpoints are loopback stubs from ``tests/batontest``.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import math
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
_KEPT = ("BATON_BENCH_COMMIT", "BATON_TOKENIZER_CACHE")  # not settings: where the run comes from and caches
for _name in [n for n in os.environ if n.startswith(("BATON_", "INCONTEXT_", "HERMES_VLLM_")) and n not in _KEPT]:
    del os.environ[_name]  # the benchmark sets every setting itself
_HERMES_HOME = Path(tempfile.mkdtemp(prefix="baton-bench-hermes-"))
os.environ["HERMES_HOME"] = str(_HERMES_HOME)  # before any Hermes import

from benchmarks.tokens import anchor_bench  # noqa: E402
from benchmarks.budget import cap_bench  # noqa: E402
from benchmarks.tokens import estimator_bench  # noqa: E402
from benchmarks.tokens import loop_bench  # noqa: E402
from benchmarks.host import memory_bench  # noqa: E402
from benchmarks.harness.percentiles import percentile  # noqa: E402
from benchmarks.recall import recall_bench  # noqa: E402
from benchmarks.budget import shapes_bench  # noqa: E402
from benchmarks.recall import store_bench  # noqa: E402
from benchmarks.tokens import tokens_bench  # noqa: E402
from benchmarks.harness import arms  # noqa: E402
from benchmarks.harness import workload  # noqa: E402
from batontest.assets import qwen3_dir, tiktoken_encoding_file  # noqa: E402
from batontest.hermes_home import git_project  # noqa: E402
from batontest.model_server import ModelServer, ScriptedPolicy, protocol_problem  # noqa: E402

from baton_engine.compaction import scan  # noqa: E402
from baton_engine.compaction.cycle import SessionFacts, first_unanswered  # noqa: E402
from baton_engine.messages.markers import STUB_PREFIX  # noqa: E402
from baton_engine.operations.handoffs import init  # noqa: E402
from baton_engine.results import call  # noqa: E402
from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402
from baton_engine.tokens.counter import TokenCounter  # noqa: E402
from baton_engine.tokens.plugins import build_backend  # noqa: E402
from baton_engine.tokens.rough import estimate_chat_request, estimate_messages_tokens_rough  # noqa: E402

MODEL = arms.MODEL
QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}
PINNED_CLOCK = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)  # Baton's runtime clock in the repeats
_MASK = re.compile(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?\b"
                   r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


class Judge:
    """Exact counts of what the model would receive (system + messages + tools), Qwen3 and o200k."""

    def __init__(self) -> None:
        self.qwen3 = TokenCounter(build_backend(QWEN3)[0], cache_size=4096)
        o200k = TokenizerConfig(backend="tiktoken", model="gpt-4o", path=str(tiktoken_encoding_file("o200k_base")))
        self.o200k = TokenCounter(build_backend(o200k)[0], cache_size=64)

    def request(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"messages": [SYSTEM, *messages], "tools": workload.TOOLS}

    def tokens(self, messages: list[dict[str, Any]]) -> int:
        counted = self.qwen3.count_chat(self.request(messages))
        if not counted.exact or counted.tokens is None:
            raise RuntimeError(f"judge count not exact ({counted.source})")
        return counted.tokens

    def o200k_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        return self.o200k.count_chat(self.request(messages)).tokens


def new_project(session: workload.Session) -> Path:
    files = {"README.md": "# ledger\n", **session.files}
    root = git_project(Path(tempfile.mkdtemp(prefix="baton-bench-project-")), files)
    result, _ = call(init, root)
    if not result.get("ok"):
        raise RuntimeError(f"baton init failed: {result.get('error')}")
    return root


def snapshot(project: Path) -> Path:
    """A copy of the project directory (git, files, store) taken before the first repeat."""
    saved = Path(tempfile.mkdtemp(prefix="baton-bench-snapshot-")) / "project"
    shutil.copytree(project, saved, symlinks=True)
    return saved


def restore(project: Path, saved: Path) -> None:
    """Put the project back to ``saved`` at the same path (the project id is the path's hash)."""
    shutil.rmtree(project)
    shutil.copytree(saved, project, symlinks=True)


def replay_captures(arm: Any, session: workload.Session, upto: int | None = None) -> int:
    """The session's ``baton_capture`` calls, each with the transcript as it was then; returns ok count."""
    history: list[dict[str, Any]] = []
    ok = 0
    for turn in session.turns[:upto]:
        history.extend(turn.messages)
        ok += sum(1 for answer in arm.capture(turn.captures, history) if answer.get("ok"))
    return ok


def tool_pair_errors(messages: list[dict[str, Any]]) -> int:
    return 0 if protocol_problem([SYSTEM, *messages]) is None else 1


def masked(messages: list[dict[str, Any]]) -> str:
    return _MASK.sub("#", json.dumps(messages, sort_keys=True, ensure_ascii=False))


def retention(session: workload.Session, result: list[dict[str, Any]], resume_text: str | None) -> dict[str, Any]:
    window_text = json.dumps(result, ensure_ascii=False)
    captured = [n for n in session.needles if n.kind in ("decision", "error")]
    return {
        "needles": len(session.needles),
        "captured": len(captured),
        "captured_in_window": sum(n.text in window_text for n in captured),
        "needles_in_window": sum(n.text in window_text for n in session.needles),
        "by_kind_in_window": {k: sum(n.text in window_text for n in session.needles if n.kind == k)
                              for k in workload.NEEDLE_KINDS},
        "retrievable": None if resume_text is None else sum(n.text in resume_text for n in session.needles),
    }


# ---- 1. compress() by conversation size ---------------------------------------------------------------

def bench_sizes(judge: Judge, runtimes: dict[str, Any], server: ModelServer, meter: arms.AuxiliaryMeter,
                sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        session = workload.sized_session(size, estimate_messages_tokens_rough, scale=0.5)
        messages = session.messages()
        tokens = judge.tokens(messages)
        context_length = math.ceil(tokens / 0.75 / 1024) * 1024  # the transcript sits at the 75% threshold
        base = {"size": size, "tokens": tokens, "o200k_tokens": judge.o200k_tokens(messages),
                "messages": len(messages), "turns": len(session.turns), "context_length": context_length}
        print(f"size {size}: {tokens} Qwen3 tokens, {len(messages)} messages, window {context_length}", flush=True)
        project = new_project(session)
        for label, runtime in runtimes.items():
            runtime.count_chat({"messages": [SYSTEM, *messages], "tools": workload.TOOLS})  # cold, outside the timing
            latencies, cpu, cold, outputs, row = [], [], None, [], {}
            real_clock, runtime.clock = runtime.clock, lambda: PINNED_CLOCK  # same input + state -> same bytes
            template = arms.BatonArm(label, project, runtime, context_length)
            replay_captures(template, session)
            template.send(judge.request(messages) | {"model": MODEL, "max_tokens": 4096})  # Hermes' last request
            saved = snapshot(project)  # the state every repeat starts from (store + engine after captures)
            ahead: list[tuple[float, int]] = []
            for rep in range(repeats + 1):
                restore(project, saved)
                arm = copy.copy(template)
                arm.engine = copy.deepcopy(template.engine)  # Hermes copies the engine per agent the same way
                scan.clear()
                runtime.counter().forget_counts()  # what a compaction counts (tails, briefs) is new every time
                if rep:  # as in the loop: each message was scanned ahead when it first reached a request
                    ahead = observe_as_requests(arm.engine, messages)
                arm.engine.count_estimate([SYSTEM, *messages])  # Hermes' pre-API estimate of its api messages
                result, stats = arm.compress(messages, tokens)
                if rep == 0:
                    cold = stats.seconds  # first compaction in this project, nothing scanned ahead, caches cold
                    row = {**base, "arm": label, "threshold": arm.threshold_tokens,
                           "degraded": arm.engine.compaction.degradation_reason,
                           **retention(session, result, arm.resume_text())}
                else:
                    latencies.append(stats.seconds)
                    cpu.append(stats.cpu_seconds)
                outputs.append(result)
            runtime.clock = real_clock
            shutil.rmtree(saved.parent)
            after = judge.tokens(outputs[-1])
            rows.append({**row, "p50_ms": 1000 * statistics.median(latencies),
                         "p95_ms": 1000 * percentile(latencies, 0.95),
                         "cpu_p50_ms": 1000 * statistics.median(cpu),
                         "first_ms": 1000 * (cold or 0.0), "tokens_after": after, "headroom": row["threshold"] - after,
                         "ahead_p95_ms": 1000 * percentile([t for t, _ in ahead], 0.95) if ahead else 0.0,
                         "ahead_ms_per_kb": 1000 * sum(t for t, _ in ahead) / max(sum(c for _, c in ahead) / 1024, 1e-9),
                         "tool_pair_errors": sum(tool_pair_errors(o) for o in outputs),
                         "identical_bytes": len({json.dumps(o, sort_keys=True) for o in outputs}) == 1,
                         "identical_masked": len({masked(o) for o in outputs}) == 1,
                         "llm_calls": 0, "llm_ms": 0.0})
            print(f"  {label}: p50 {rows[-1]['p50_ms']:.0f} ms, after {after}", flush=True)
        latencies, cpu, outputs, calls, llm = [], [], [], [], []
        for _ in range(max(2, repeats // 2)):
            hermes = arms.HermesArm(server.base_url, MODEL, context_length, meter)
            result, stats = hermes.compress(messages, tokens)
            latencies.append(stats.seconds - stats.llm_seconds)
            cpu.append(stats.cpu_seconds)
            calls.append(stats.llm_calls)
            llm.append(stats.llm_seconds)
            outputs.append(result)
        after = judge.tokens(outputs[-1])
        rows.append({**base, "arm": "hermes-builtin", "threshold": hermes.threshold_tokens, "degraded": None,
                     **retention(session, outputs[-1], None),
                     "p50_ms": 1000 * statistics.median(latencies), "p95_ms": 1000 * percentile(latencies, 0.95),
                     "cpu_p50_ms": 1000 * statistics.median(cpu), "first_ms": 1000 * latencies[0],
                     "tokens_after": after, "headroom": hermes.threshold_tokens - after,
                     "tool_pair_errors": sum(tool_pair_errors(o) for o in outputs),
                     "identical_bytes": len({json.dumps(o, sort_keys=True) for o in outputs}) == 1,
                     "identical_masked": len({masked(o) for o in outputs}) == 1,
                     "llm_calls": statistics.median(calls), "llm_ms": 1000 * statistics.median(llm)})
        print(f"  hermes: local p50 {rows[-1]['p50_ms']:.0f} ms + {rows[-1]['llm_calls']} LLM call(s)", flush=True)
    return rows


def observe_as_requests(engine: Any, messages: list[dict[str, Any]]) -> list[tuple[float, int]]:
    """Each message reaching the engine in one more request, as the loop sends them (the scan ahead only; the
    counts of those requests are the warm counter's). Returns (thread CPU seconds, characters) per request."""
    spent = []
    engine.scan_ahead.upto = 0  # the session from its first request
    for end in range(1, len(messages) + 1):
        started = time.thread_time()
        engine.prepare_compaction(messages[:end])
        spent.append((time.thread_time() - started, len(json.dumps(messages[end - 1], ensure_ascii=False))))
    return spent


# ---- 2. the growing 600-turn session ------------------------------------------------------------------

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


def bench_long_session(judge: Judge, runtimes: dict[str, Any], server: ModelServer, meter: arms.AuxiliaryMeter,
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


# ---- 3. output budgets: rough vs exact, Baton vs incontext ----------------------------------------------

def bench_budgets(judge: Judge, session: workload.Session, window: int, caller_cap: int, count: int) -> dict[str, Any]:
    from incontext.budget import DynamicOutputBudget
    from incontext.settings import Settings
    from incontext.vllm import VllmBackend, VllmEnvironment

    from agent.context_compressor import ContextCompressor
    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.budget import apply_output
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.policy import Limits
    from baton_engine.settings import BatonSettings
    from baton_engine.tokens.contract import TokenCount
    from batontest.vllm_standin import VllmStandin

    hermes_threshold = ContextCompressor(model=MODEL, threshold_percent=0.75, base_url="http://127.0.0.1:9/v1",
                                         config_context_length=window, provider="custom", quiet_mode=True,
                                         max_tokens=caller_cap).threshold_tokens
    turns = session.turns[::-1]  # newest turns first: different content from the long-session start

    def history(n: int) -> list[dict[str, Any]]:
        return [m for turn in turns[:n] for m in turn.messages]

    sizes = anchor_bench.budget_histories(lambda n: judge.tokens(history(n)), len(turns), window, count)
    requests = [{"model": MODEL, "messages": [SYSTEM, *history(n)], "tools": workload.TOOLS,
                 "max_tokens": caller_cap, "stream": True} for n in sizes]
    # Usage-anchored counts of the same requests: (a) the tokenizer lost halfway, (b) no tokenizer at all.
    anchored = anchor_bench.budget_counts(lambda r: judge.tokens(r["messages"][1:]), judge.qwen3.backend, turns, sizes)
    rows = []
    with VllmStandin(max_model_len=window, model_name=MODEL) as standin:
        vllm_config = TokenizerConfig(backend="vllm", url=f"{standin.url}/tokenize", model=MODEL, context_length=window)
        baton_vllm = BatonRuntime(BatonSettings(tokenizer=vllm_config))
        baton_vllm.context_length = window
        baton_hf = BatonRuntime(BatonSettings(tokenizer=QWEN3))
        baton_hf.context_length = window
        os.environ["INCONTEXT_TOKENIZER_URL"] = f"{standin.url}/tokenize"  # skelet reads settings from env only
        env = VllmEnvironment()
        incontext = DynamicOutputBudget(
            Settings(model_name=MODEL, context_length=window, compression_window=hermes_threshold,
                     fallback_margin_tokens=1024, min_output_tokens=4096, provider="", base_url=""),
            VllmBackend(environment=env))
        for index, request in enumerate(requests):
            exact = judge.tokens(request["messages"][1:])
            rough = estimate_chat_request({"messages": request["messages"], "tools": request["tools"]})

            def budget_for(count: TokenCount, margin: int = 1024) -> int | None:
                decision, _ = apply_output(request, count, Limits.of_window(window, 4096, margin))
                return decision.value if decision.action == "lower_cap_to" else None

            def clamp_request(runtime: BatonRuntime, request: dict[str, Any]) -> dict[str, Any] | None:
                """What the engine of a fresh agent sends for this request (counter caches shared)."""
                set_runtime(runtime)
                engine = BatonContextEngine(project_dir=Path(tempfile.mkdtemp(prefix="baton-bench-budget-")))
                engine.update_model(MODEL, window)
                return engine.on_request(request)

            def rough_budget(margin: int) -> int | None:
                return budget_for(TokenCount(rough, False, "rough"), margin)

            def calls(action: Any) -> tuple[Any, int]:
                before = standin.total_requests
                value = action()
                return value, standin.total_requests - before

            clamped_hf = clamp_request(baton_hf, request)
            clamped_vllm, vllm_calls = calls(lambda: clamp_request(baton_vllm, request))
            _, vllm_repeat = calls(lambda: clamp_request(baton_vllm, request))
            answer, incontext_calls = calls(lambda: incontext(request=request, model=MODEL))
            _, incontext_repeat = calls(lambda: incontext(request=request, model=MODEL))
            rows.append({
                "prompt": exact, "rough": rough, "unchanged": caller_cap,
                "rough_nomargin": rough_budget(0), "rough_margin": rough_budget(1024),
                "anchored_lost": budget_for(anchored["anchored_lost"][index]),
                "anchored_usage": budget_for(anchored["anchored_usage"][index]),
                "baton_hf": clamped_hf["max_tokens"] if clamped_hf else None,
                "baton_vllm": clamped_vllm["max_tokens"] if clamped_vllm else None,
                "incontext": answer["request"]["max_tokens"] if answer else None,
                "baton_vllm_calls": vllm_calls, "baton_vllm_repeat_calls": vllm_repeat,
                "incontext_calls": incontext_calls, "incontext_repeat_calls": incontext_repeat,
            })
        baton_vllm.close()
    return {"window": window, "caller_cap": caller_cap, "incontext_window": hermes_threshold, "requests": rows}


# ---- 4. per-turn overhead at long histories ---------------------------------------------------------------

def bench_overhead(judge: Judge, runtime: Any, session: workload.Session, sizes: list[int],
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


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib import metadata

    versions = {name: metadata.version(name) for name in
                ("hermes-agent", "incontext", "tokenizers", "transformers", "tiktoken", "matplotlib")}
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(), "versions": versions, "commit": _commit()}


def _commit() -> str:
    """The checkout's commit (``BATON_BENCH_COMMIT`` for a snapshot without .git)."""
    import subprocess

    if os.environ.get("BATON_BENCH_COMMIT"):
        return os.environ["BATON_BENCH_COMMIT"]
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


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
        results["sizes"] = bench_sizes(judge, runtimes, server, meter, sizes, repeats=3 if args.quick else 9)
        long_runtimes = {**runtimes, FALLBACK_ARM: arms.baton_runtime(QWEN3, None)}
        results["long"] = bench_long_session(judge, long_runtimes, server, meter, long_session, [16384, 65536])
        results["stub_requests"] = len(server.auxiliary_requests)
    results["budgets"] = bench_budgets(judge, long_session, 65536, 65536, 10 if args.quick else 60)
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
    results["overhead"] = bench_overhead(judge, runtimes["baton"], overhead_session,
                                         [200, 600] if args.quick else [200, 1000, 4000], turns=20)
    results["seconds"] = time.time() - started
    (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    print(f"results written in {results['seconds']:.0f} s", flush=True)
    from benchmarks.report import render

    render.write(results, args.out)
    if shapes_bench.failed(results["shapes"]):
        print(f"FAILED: {shapes_bench.target(results['shapes'])[2]} (REPORT.md, shapes section)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
