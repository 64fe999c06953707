"""Compaction: post-compaction message lists (the Baton block, a pair-safe verbatim tail, degradation)
and ``cycle``, one compaction as a Baton handoff.

The list builders are pure (no I/O): callers pass messages, an already-rendered brief and a
token-counting callable, and get a valid OpenAI-format message list back. ``cycle`` adds the handoff
store (capture -> redact -> validate -> persist -> brief) and is host-neutral: no Hermes import, so the
engine, the MCP server and the CLI could run the same cycle.
"""

from __future__ import annotations

from baton_engine.compaction.builder import (
    DEFAULT_MAX_BLOCK_TOKENS,
    BatonBlock,
    CompactionResult,
    CountTokens,
    DegradeReason,
    TailPlan,
    build_compacted_messages,
    degrade,
    plan_tail,
)

__all__ = [
    "DEFAULT_MAX_BLOCK_TOKENS",
    "BatonBlock",
    "CompactionResult",
    "CountTokens",
    "DegradeReason",
    "TailPlan",
    "build_compacted_messages",
    "degrade",
    "plan_tail",
]
