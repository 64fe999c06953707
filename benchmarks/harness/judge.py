"""The judge of every arm: exact counts of what the model would receive (system prompt + messages + tool schemas),
with the real Qwen3 tokenizer and o200k beside it. Why one judge: each arm is measured by the same counts, never
by its own counter."""

from __future__ import annotations

from typing import Any

from batontest.assets import qwen3_dir, tiktoken_encoding_file
from batontest.model_server import protocol_problem

from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend
from benchmarks.harness import arms, workload

MODEL = arms.MODEL
QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}


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


def tool_pair_errors(messages: list[dict[str, Any]]) -> int:
    return 0 if protocol_problem([SYSTEM, *messages]) is None else 1
