"""The reclamation benchmark's prefix cache (``benchmarks/harness/prefix_cache.py``) against a REAL vLLM 0.32 CPU server with
prefix caching on (``--enable-prefix-caching --enable-prompt-tokens-details``, blocks of 32 tokens: the CPU
attention's smallest): the same growing session, with one
prune that rewrites an early tool result in place and one compaction that rewrites the history from its start, sent
to the server; the tokens the server says it read from its cache (``usage.prompt_tokens_details.cached_tokens``)
against the simulator's figure for the same requests: within 5% in all, and request by request within a block or two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from batontest.model_server import PromptCounter, filler_text
from batontest.real_vllm import real_vllm_server

from benchmarks.harness.prefix_cache import PrefixCache

pytestmark = pytest.mark.vllm_real
MODEL = "qwen3-cache"
WINDOW = 16_384
SYSTEM = {"role": "system", "content": "You are Hermes, a coding agent."}
BLOCK = 32  # the smallest block vLLM's CPU attention takes (a GPU's default is 16: the benchmark's)


def _round(n: int) -> list[dict[str, Any]]:
    call = f"call_{n}"
    return [{"role": "user", "content": f"Read part {n} of the design."},
            {"role": "assistant", "content": f"Reading part {n}.", "tool_calls": [{"id": call, "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"docs/part_{n}.md"})}}]},
            {"role": "tool", "tool_call_id": call, "content": filler_text(f"p{n}", 350)},
            {"role": "assistant", "content": f"Part {n} read."}]


def _requests() -> list[list[dict[str, Any]]]:
    """The conversation before each request: growing, pruned in place at round 6, compacted at round 10."""
    history: list[dict[str, Any]] = []
    sent = []
    for n in range(14):
        history = history + _round(n)
        if n == 6:  # a prune: round 1's result becomes a stub, everything else as it was
            history = [dict(m, content="[Baton pruned result of read_file: already answered]")
                       if m.get("tool_call_id") == "call_1" else m for m in history]
        if n == 10:  # a compaction: a block, then the last two rounds
            history = [{"role": "user", "content": "[Baton handoff: the design was read]"},
                       {"role": "assistant", "content": "Continuing."}, *history[-8:]]
        sent.append(history)
    return sent


def test_the_simulated_prefix_cache_reads_what_a_real_vllm_reads(tmp_path: Path) -> None:
    counter = PromptCounter()

    def count(messages: list[dict[str, Any]]) -> int:
        return counter({"messages": [SYSTEM, *messages]})

    simulator = PrefixCache(count, block=BLOCK)
    rows = []
    with real_vllm_server(tmp_path, max_model_len=WINDOW, served_model_name=MODEL, agent_flags=True,
                          extra_flags=("--enable-prompt-tokens-details", "--block-size", str(BLOCK))) as url, \
            httpx.Client(timeout=120) as client:
        for history in _requests():
            answer = client.post(f"{url}/v1/chat/completions", json={
                "model": MODEL, "messages": [SYSTEM, *history], "max_tokens": 1, "temperature": 0})
            assert answer.status_code == 200, answer.text[:500]
            usage = answer.json()["usage"]
            prompt = count(history)
            assert usage["prompt_tokens"] == prompt  # the simulator counts the server's own prompt
            cached, _ = simulator.read(history, prompt)
            rows.append((prompt, (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0, cached))
    print("\n(prompt, vLLM cached, simulated cached):", rows)
    served, simulated = sum(r[1] for r in rows), sum(r[2] for r in rows)
    assert served > 0, "vLLM reported no cache hits: prefix caching or its usage details are off"
    assert abs(simulated - served) <= 0.05 * served, (simulated, served)
    assert all(abs(r[1] - r[2]) <= 2 * BLOCK for r in rows), rows
