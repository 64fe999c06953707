"""Output budgets on the same requests: the overflows of each way of budgeting and its tokenizer calls.

max_tokens left as Hermes sends it, rough chars/4 with and without a margin, usage-anchored, and exact (Baton
through hf and vLLM /tokenize, incontext through /tokenize). Run by ``benchmarks/run.py`` on its growing session."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.rough import estimate_chat_request
from benchmarks.harness import workload
from benchmarks.harness.judge import MODEL, QWEN3, SYSTEM, Judge
from benchmarks.harness.markdown_table import markdown_table
from benchmarks.harness.targets import Target
from benchmarks.tokens import anchor_bench

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("exact counts (Baton hf and vLLM, incontext) never overflow; rough chars/4 undercounts "
               "these prompts by ~10-13% and overflows even with the 1,024-token margin"),
    "target": "0 budget overflows with exact and with usage-anchored counting",
    "findings": 7,
    "test": "tests/bench/test_quick_run.py",
}



def measure(judge: Judge, session: workload.Session, window: int, caller_cap: int, count: int) -> dict[str, Any]:
    """``count`` requests of the session's newest turns near ``window``, budgeted rough, anchored and exact by Baton
    and by incontext, with the tokenizer calls each made."""
    from incontext.budget import DynamicOutputBudget
    from incontext.settings import Settings
    from incontext.vllm import VllmBackend, VllmEnvironment

    from agent.context_compressor import ContextCompressor
    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.policy import Limits
    from baton_engine.settings import BatonSettings
    from baton_engine.shapes.cap import apply_output
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


def targets(budgets: dict[str, Any]) -> list[Target]:
    overflow_exact = sum(1 for r in budgets["requests"] for key in ("baton_hf", "baton_vllm")
                         if r[key] is not None and r["prompt"] + r[key] > budgets["window"])
    overflow_anchored = sum(1 for r in budgets["requests"] for key in ("anchored_lost", "anchored_usage")
                            if r.get(key) is not None and r["prompt"] + r[key] > budgets["window"])
    return [
        ("0 budget overflows with exact counting", overflow_exact == 0, f"{overflow_exact} overflows"),
        ("0 budget overflows with usage-anchored counting (tokenizer lost halfway / no tokenizer)",
         overflow_anchored == 0, f"{overflow_anchored} overflows"),
    ]


def render(budgets: dict[str, Any]) -> list[str]:
    reqs = budgets["requests"]
    window = budgets["window"]

    def overflows(key: str) -> str:
        applied = [r for r in reqs if r[key] is not None]
        over = sum(1 for r in applied if r["prompt"] + r[key] > window)
        return f"{over} of {len(applied)} budgeted ({len(reqs) - len(applied)} left unchanged: need compaction)"

    out = ["## Output budgets (same requests)", "",
           f"{len(reqs)} requests with exact prompts from {min(r['prompt'] for r in reqs)} to "
           f"{max(r['prompt'] for r in reqs)} Qwen3 tokens, window {window}, caller cap "
           f"max_tokens={budgets['caller_cap']} "
           "(the default Hermes sends for custom/vLLM providers). Overflow = exact prompt + max_tokens > window. "
           f"incontext budgets against Hermes' threshold ({budgets['incontext_window']}), Baton against the window; "
           "both use the vLLM /tokenize stand-in (`tests/batontest/vllm_standin.py`, real Qwen3 template).", ""]
    out += markdown_table(["budgeting", "overflows"], [
        ["unchanged (Hermes default)",
         f"{sum(1 for r in reqs if r['prompt'] + r['unchanged'] > window)} of {len(reqs)}"],
        ["rough chars/4, no margin", overflows("rough_nomargin")],
        ["rough chars/4 + 1024 margin (Baton's last-resort fallback)", overflows("rough_margin")],
        ["Baton anchored, tokenizer lost halfway (exact, then provider usage)", overflows("anchored_lost")],
        ["Baton anchored, no tokenizer (provider usage only)", overflows("anchored_usage")],
        ["Baton exact (hf, local)", overflows("baton_hf")],
        ["Baton exact (vllm /tokenize)", overflows("baton_vllm")],
        ["incontext exact (vllm /tokenize)", overflows("incontext")],
    ])
    both = [r for r in reqs if r["baton_vllm"] is not None and r["incontext"] is not None]
    if both:
        gap = sorted(r["baton_vllm"] - r["incontext"] for r in both)
        out += ["", f"max_tokens, Baton minus incontext on the {len(both)} requests both budgeted: median "
                f"{gap[len(gap) // 2]}, min {gap[0]}, max {gap[-1]} (incontext reserves Hermes' threshold margin)."]
    out += ["", "Tokenizer calls per request (middleware only): Baton "
            f"{sum(r['baton_vllm_calls'] for r in reqs) / len(reqs):.2f} first, "
            f"{sum(r['baton_vllm_repeat_calls'] for r in reqs) / len(reqs):.2f} on a repeat; incontext "
            f"{sum(r['incontext_calls'] for r in reqs) / len(reqs):.2f} first, "
            f"{sum(r['incontext_repeat_calls'] for r in reqs) / len(reqs):.2f} on a repeat; incontext's preflight "
            "builds a different payload than its middleware (typically two calls per turn).", ""]
    return out
