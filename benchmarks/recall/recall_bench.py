"""Needle recall after one compaction (issue 12, item 6): (a) still in the window, (b) with ONE
``baton_recall`` search whose query is the needle itself, (c) in the handoff brief (anchors, user words,
captured records), by needle kind and session size; and the chat-only workload's 12 early facts at an 8K
and a 64K window.

Why the real engine and not a model: the question is what reaches the model, so each session is
compacted by ``BatonContextEngine.compress`` (the transcript at its 75% threshold, no session store bound:
the in-process index answers) and ``baton_recall`` is called through the engine's own tool entry point.
The same session is compacted by Hermes' built-in ``ContextCompressor`` too (its summary call answered by
the loopback stub, so only verbatim survivors count for it): needles in its window, and the tokens each
arm retains.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import arms
from benchmarks.harness import chat_workload
from benchmarks.harness import workload
from batontest.assets import qwen3_dir
from batontest.hermes_home import git_project
from batontest.model_server import ModelServer, ScriptedPolicy

from baton_engine.messages.markers import is_baton_message
from baton_engine.operations.handoffs import init
from baton_engine.results import call
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.rough import estimate_messages_tokens_rough

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "needles found with one baton_recall call: 100% (tool-heavy 20k, chat at 8K and 64K)",
    "target": ">= 95% with one call; <= 25% of the built-in's tokens retained (NOT met)",
    "findings": 3,
    "test": "tests/bench/test_recall_bench.py",
}

QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
TARGET_ONE_CALL = 0.95
TARGET_RETAINED_SHARE = 0.25  # Baton retains at most a quarter of the built-in's tokens
PUBLISHED = (("built-in summary", "45.8%"), ("lean + one search", "68.3%"),
             ("uncompacted", "96.7%"))  # Hermes' compaction scorecard: published, not measured here
CHAT_WINDOWS = (8192, 65536)


def _project(files: dict[str, str]) -> Path:
    root = git_project(Path(tempfile.mkdtemp(prefix="baton-bench-recall-")), {"README.md": "# ledger\n", **files})
    call(init, root)
    return root


def _query(needle: str) -> str:
    return f'"{needle}"' if " " in needle else needle


def _score(arm: arms.BatonArm, compacted: list[dict[str, Any]], needles: list[tuple[str, str]]) -> list[dict]:
    """Per (kind, needle): in window, found by one search (any hit's snippet), in the brief."""
    window = json.dumps([m for m in compacted if not is_baton_message(m)], ensure_ascii=False)
    brief = "\n".join(str(m.get("content")) for m in compacted if is_baton_message(m))
    rows = []
    for kind, text in needles:
        answer = json.loads(arm.engine.handle_tool_call("baton_recall", {"mode": "search", "query": _query(text)}))
        hits = answer.get("hits") or []
        rows.append({"kind": kind, "in_window": text in window, "in_brief": text in brief,
                     "one_call": text in window or any(text in hit["snippet"] for hit in hits),
                     "top_hit": bool(hits) and text in hits[0]["snippet"]})
    return rows


def _compact(label: str, runtime: Any, messages: list[dict[str, Any]], files: dict[str, str],
             context_length: int, session: workload.Session | None = None
             ) -> tuple[arms.BatonArm, list[dict[str, Any]], int, int]:
    """One compaction at ``context_length``; a tool session's ``baton_capture`` calls are replayed first."""
    arm = arms.BatonArm(label, _project(files), runtime, context_length)
    arm.engine.on_session_start(f"bench-{label}", platform="cli")
    history: list[dict[str, Any]] = []
    for turn in session.turns if session is not None else ():
        history.extend(turn.messages)
        arm.capture(turn.captures, history)
    tokens = runtime.count_chat({"messages": messages}).tokens or 0
    compacted, _stats = arm.compress(messages, tokens)
    after = runtime.count_chat({"messages": compacted}).tokens or 0
    return arm, compacted, tokens, after


def _builtin(server: ModelServer, meter: arms.AuxiliaryMeter, runtime: Any, messages: list[dict[str, Any]],
             context_length: int, needles: list[str]) -> dict[str, Any]:
    """Hermes' built-in compressor on the same transcript: needles left in its window, tokens it retains."""
    arm = arms.HermesArm(server.base_url, arms.MODEL, context_length, meter)
    tokens = runtime.count_chat({"messages": messages}).tokens or 0
    compacted, stats = arm.compress(messages, tokens)
    window = json.dumps(compacted, ensure_ascii=False)
    return {"in_window": sum(text in window for text in needles) / len(needles),
            "tokens_after": runtime.count_chat({"messages": compacted}).tokens or 0, "llm_calls": stats.llm_calls}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    kinds = sorted({r["kind"] for r in rows})
    share = {key: sum(r[key] for r in rows) / len(rows) for key in ("in_window", "one_call", "in_brief", "top_hit")}
    return {"needles": len(rows), **share,
            "by_kind": {k: {key: sum(r[key] for r in rows if r["kind"] == k) for key in
                            ("in_window", "one_call", "in_brief")} | {"n": sum(r["kind"] == k for r in rows)}
                        for k in kinds}}


def run(quick: bool) -> dict[str, Any]:
    runtime = arms.baton_runtime(QWEN3, None)
    runtime_tail0 = arms.baton_runtime(QWEN3, 0)  # no verbatim tail: the block, the latest request, in-flight
    meter = arms.AuxiliaryMeter()
    tool_rows, chat_rows = [], []
    with ModelServer(ScriptedPolicy([], auxiliary_answer=arms.STUB_SUMMARY), context_window=2_000_000,
                     model_name=arms.MODEL) as server:
        for size in ([20_000] if quick else [20_000, 100_000]):
            session = workload.sized_session(size, estimate_messages_tokens_rough, scale=0.5)
            messages = session.messages()
            rough = estimate_messages_tokens_rough(messages)
            context_length = max(65536, math.ceil(rough / 0.75 / 1024) * 1024)
            arm, compacted, before, after = _compact(f"tools-{size}", runtime, messages, session.files,
                                                     context_length, session)
            rows = _score(arm, compacted, [(n.kind, n.text) for n in session.needles])
            builtin = _builtin(server, meter, runtime, messages, context_length, [n.text for n in session.needles])
            arm0, compacted0, _, after0 = _compact(f"tools-{size}-tail0", runtime_tail0, messages, session.files,
                                                  context_length, session)
            tail0 = {"tokens_after": after0,
                     **_summary(_score(arm0, compacted0, [(n.kind, n.text) for n in session.needles]))}
            tool_rows.append({"size": size, "tokens": before, "tokens_after": after, "window": context_length,
                              "degraded": arm.engine.compaction.degradation_reason, "builtin": builtin, "tail0": tail0,
                              **_summary(rows)})
            print(f"recall tools {size}: {tool_rows[-1]['one_call']:.0%} with one call, retained {after} vs "
                  f"built-in {builtin['tokens_after']}", flush=True)
        session = chat_workload.chat_session(200)
        for window in CHAT_WINDOWS:
            arm, compacted, before, after = _compact(f"chat-{window}", runtime, list(session.messages), {}, window)
            facts = [("fact", needle) for _sentence, needle in session.facts]
            rows = _score(arm, compacted, facts)
            builtin = _builtin(server, meter, runtime, list(session.messages), window, [f for _, f in facts])
            arm0, compacted0, _, after0 = _compact(f"chat-{window}-tail0", runtime_tail0, list(session.messages),
                                                  {}, window)
            tail0 = {"tokens_after": after0, **_summary(_score(arm0, compacted0, facts))}
            chat_rows.append({"window": window, "tokens": before, "tokens_after": after,
                              "degraded": arm.engine.compaction.degradation_reason, "builtin": builtin, "tail0": tail0,
                              **_summary(rows)})
            print(f"recall chat {window}: {chat_rows[-1]['in_brief']:.0%} facts in the brief, retained {after} vs "
                  f"built-in {builtin['tokens_after']}", flush=True)
    return {"tools": tool_rows, "chat": chat_rows, "target_one_call": TARGET_ONE_CALL,
            "target_retained_share": TARGET_RETAINED_SHARE}


def verdicts(result: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """The section's targets for the report's Targets table: (target, met, measured)."""
    rows = result["tools"] + result["chat"]
    share = result["target_retained_share"]
    return [
        (f"needle recall with ONE baton_recall call >= {_pct(result['target_one_call'])} (every session)",
         all(r["one_call"] >= result["target_one_call"] for r in rows),
         ", ".join(f"{_label(r)} {_pct(r['one_call'])}" for r in rows)),
        (f"Baton retains <= {share:.0%} of the built-in's tokens after the same compaction",
         all(r["tokens_after"] <= share * r["builtin"]["tokens_after"] for r in rows),
         ", ".join(f"{_label(r)} {_retained(r['tokens_after'], r)}" for r in rows)),
        (f"the same with fresh_tail_tokens 0 (no verbatim tail): recall >= {_pct(result['target_one_call'])} and "
         f"<= {share:.0%} of the built-in's tokens",
         all(r["tail0"]["one_call"] >= result["target_one_call"]
             and r["tail0"]["tokens_after"] <= share * r["builtin"]["tokens_after"] for r in rows),
         ", ".join(f"{_label(r)} {_pct(r['tail0']['one_call'])}, {_retained(r['tail0']['tokens_after'], r)}"
                   for r in rows)),
    ]


def _retained(tokens: int, row: dict[str, Any]) -> str:
    builtin = row["builtin"]["tokens_after"]
    return f"{tokens:,} / {builtin:,} ({tokens / max(builtin, 1):.3f})"


def _label(row: dict[str, Any]) -> str:
    return f"tools {row['size'] // 1000}k" if "size" in row else f"chat@{row['window'] // 1024}K"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def render(result: dict[str, Any]) -> list[str]:
    """The report section (the verdicts are computed from the raw rows, see :func:`verdicts`)."""
    (recall_target, recall_met, _), (retained_target, retained_met, _), _tail0 = verdicts(result)
    out = ["## Needle recall after one compaction", "",
           "Each session at its 75% threshold, compacted once by Baton (`benchmarks/recall/recall_bench.py`); a needle "
           "counts (a) when it is still in the window, (b) when it is in the window or in a hit of ONE "
           "`baton_recall` search whose query is the needle, (c) when the handoff block (brief: records, anchors, "
           "user words) holds it verbatim. The same transcript is compacted by Hermes' built-in compressor at the "
           "same window (its summary call answered by the loopback stub with a fixed text, so only verbatim "
           "survivors count for it). Retained = tokens of the compacted message list (no system prompt, no tools), "
           f"both arms. Targets: {recall_target}: {'met' if recall_met else 'NOT met'}; {retained_target}: "
           f"{'met' if retained_met else 'NOT met'}.", "",
           "| session | tokens before | needles | (a) in window | (b) one recall call | top hit | (c) in brief | "
           "built-in: in window | retained Baton / built-in (ratio) | tail 0: (b), retained / built-in | "
           "by kind (a/b/c of n) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["tools"] + result["chat"]:
        name = f"tool-heavy {r['size']:,}" if "size" in r else f"chat 200 turns, {r['window'] // 1024}K window"
        kinds = "; ".join(f"{k} {v['in_window']}/{v['one_call']}/{v['in_brief']} of {v['n']}"
                          for k, v in r["by_kind"].items()) if "size" in r else ""
        out.append(f"| {name} | {r['tokens']:,} | {r['needles']} | {_pct(r['in_window'])} | {_pct(r['one_call'])} | "
                   f"{_pct(r['top_hit'])} | {_pct(r['in_brief'])} | {_pct(r['builtin']['in_window'])} | "
                   f"{_retained(r['tokens_after'], r)} | {_pct(r['tail0']['one_call'])}, "
                   f"{_retained(r['tail0']['tokens_after'], r)} | {kinds} |")
    out += ["", "Published by Hermes (its compaction scorecard; NOT measured here, for scale only):", ""]
    out += ["| arm (published) | recall |", "|---|---|"] + [f"| {name} | {value} |" for name, value in PUBLISHED]
    return [*out, ""]
