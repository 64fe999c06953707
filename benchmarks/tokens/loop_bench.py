"""Tokenizer round trips per provider request, measured through the REAL Hermes agent loop.

Why the real loop: a unit test of the shared count proved one round trip per request while the loop made
2.6 (the pre-API estimate and the middleware counted different views). Here hermes-agent 0.19.0's
``AIAgent`` runs a scripted tool-heavy session against the loopback model server, Baton counts through a
loopback vLLM ``/tokenize`` (``tests/batontest/vllm_standin.py``), and the stand-in's own request log is
the figure: chat-form ``/tokenize`` requests per provider request, with compactions named apart.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from batontest.hermes_run import WINDOW, run_scenario
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script
from batontest.vllm_standin import VllmStandin

from benchmarks.harness.markdown_table import markdown_table
from benchmarks.harness.targets import verdict

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "19 provider requests, 3 compactions: 25 chat /tokenize calls (1.32 per request)",
    "target": "1 per provider request in steady state, plus at most 3 per compaction",
    "findings": None,
    "test": "tests/bench/test_quick_run.py",
}

TURNS = ("Analyse the inventory service findings round by round and keep the task list current.",
         "Thanks. Summarise what is left to do.")


def run(quick: bool) -> dict[str, Any]:
    rounds = 6 if quick else 14
    policy = ScriptedPolicy(tool_heavy_script(rounds, capture_every=4), final_answer="Done.")
    with VllmStandin(max_model_len=WINDOW) as standin, ModelServer(policy, context_window=WINDOW) as server:
        tokenizer = {"backend": "vllm", "url": standin.url, "model": standin.model_name}
        scenario = run_scenario(Path(tempfile.mkdtemp(prefix="baton-bench-loop-")), server, turns=TURNS,
                                baton={"tokenizer": tokenizer, "fallback_token_threshold": 12_000,
                                       "auto_checkpoint_on_end": False})
        chat_tokenize = len(standin.tokenize_bodies)
        all_tokenize = standin.requests_received["/tokenize"]
    requests = len(server.main_requests) + len(server.auxiliary_requests)
    compactions = scenario.result["compression_count"]
    row = {"provider_requests": requests, "compactions": compactions, "chat_tokenize": chat_tokenize,
           "all_tokenize": all_tokenize, "rejections": len(server.rejections),
           "per_request": chat_tokenize / max(requests, 1),
           "bound": requests + 3 * compactions}  # the target: one per request, at most 3 per compaction
    print(f"real loop: {requests} provider requests, {compactions} compactions, {chat_tokenize} chat /tokenize "
          f"({row['per_request']:.2f} per request)", flush=True)
    return row


def render(loop: dict[str, Any]) -> list[str]:
    steady = loop["chat_tokenize"] <= loop["bound"] and loop["rejections"] == 0
    out = ["## Tokenizer round trips in the real Hermes loop", "",
           "hermes-agent 0.19.0's `AIAgent`, a scripted tool-heavy session, Baton counting through a loopback "
           "vLLM `/tokenize` (`benchmarks/tokens/loop_bench.py`): the pre-API estimate, the turn-start preflight and "
           "the middleware share one count per request view. Target 1 per provider request in steady state "
           f"(plus at most 3 per compaction): {verdict(steady)}.", ""]
    out += markdown_table(["provider requests", "compactions", "chat /tokenize", "per request",
                           "target: requests + 3 x compactions", "refused requests"],
                          [[loop["provider_requests"], loop["compactions"], loop["chat_tokenize"],
                            f"{loop['per_request']:.2f}", loop["bound"], loop["rejections"]]])
    out += [""]
    return out
