"""vLLM's automatic prefix caching, simulated for a sequence of chat requests: what each reads from the cache.

Why a module of its own: ``reclaim_bench.py`` prices its arms with it, and ``tests/vllm/test_prefix_cache.py``
checks it against a real vLLM server's own ``prompt_tokens_details.cached_tokens`` on the same requests. vLLM keeps
the KV of every computed prompt in ``BLOCK``-token blocks keyed by the whole prefix before them; a new request reuses
the full blocks of the longest prefix it shares with what is cached, and always computes its last token. A request
here shares with the one before it the messages up to the first changed one (the prefix a prune or a compaction
rewrites from); the tokens of that prefix come from ``count`` (the chat template's rendering up to it, less the
generation prompt the count adds).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

BLOCK = 16  # vLLM's default block size on a GPU (its CPU attention needs a multiple of 32, 128 by default)
GENERATION_PROMPT_TOKENS = 3  # Qwen3's "<|im_start|>assistant\n", which a count of a prefix adds at its end


class PrefixCache:
    """The cache as one conversation's requests fill it: ``read`` each request in order."""

    def __init__(self, count: Callable[[list[dict[str, Any]]], int], block: int = BLOCK) -> None:
        self.count = count  # the prompt tokens of the request made of these messages (system and tools around them)
        self.block = block
        self.previous: list[str] | None = None

    def read(self, messages: list[dict[str, Any]], prompt: int) -> tuple[int, bool]:
        """(tokens of this ``prompt``-token request read from the cache, whether it broke the cached prefix: it
        does not extend the request before it)."""
        keys = [json.dumps(m, sort_keys=True) for m in messages]
        previous, self.previous = self.previous, keys
        if previous is None:
            return 0, False
        shared = 0
        for old, new in zip(previous, keys):
            if old != new:
                break
            shared += 1
        prefix = self.count(messages[:shared]) - GENERATION_PROMPT_TOKENS
        return max(min(prefix, prompt - 1) // self.block * self.block, 0), shared < len(previous)
