"""Speed figures for the report: tokens per second on the corpus and what a repeated count costs.

Printed, never judged: timings on a shared machine are noise for a pass/fail line, but an author wants to
see whether a cache works (a repeated count should cost a fraction of the first).
"""

from __future__ import annotations

import statistics
import time

from baton_engine.testing.outcomes import Item, count, items, try_clear_cache
from baton_engine.testing.report import INFO, Check
from baton_engine.tokens.contract import TokenizerBackend

ROUNDS = 3
LARGEST = "long-200"  # the corpus's 200-message conversation: the repeated-count figure


def _timed(backend: TokenizerBackend, item: Item) -> tuple[float, int]:
    started = time.perf_counter()
    outcome = count(backend, item)
    seconds = time.perf_counter() - started
    return seconds, outcome.count.tokens if outcome.count is not None and outcome.count.tokens else 0


def _rate(backend: TokenizerBackend, chosen: list[Item]) -> float:
    """Tokens per second counting ``chosen`` on an emptied cache (median of ``ROUNDS``)."""
    rates = []
    for _ in range(ROUNDS):
        try_clear_cache(backend)
        timed = [_timed(backend, item) for item in chosen]
        seconds = sum(s for s, _ in timed)
        rates.append(sum(t for _, t in timed) / seconds if seconds > 0 else 0.0)
    return statistics.median(rates)


def measure(backend: TokenizerBackend) -> dict[str, float]:
    corpus = items()
    largest = next(item for item in corpus if item.name == LARGEST)
    first, repeat = [], []
    for _ in range(ROUNDS):
        try_clear_cache(backend)
        first.append(_timed(backend, largest)[0])
        repeat.append(_timed(backend, largest)[0])
    return {
        "chat_tokens_per_second": round(_rate(backend, [item for item in corpus if item.kind == "chat"])),
        "text_tokens_per_second": round(_rate(backend, [item for item in corpus if item.kind == "text"])),
        "first_count_ms": round(statistics.median(first) * 1000, 3),
        "repeated_count_ms": round(statistics.median(repeat) * 1000, 3),
    }


def describe(figures: dict[str, float]) -> Check:
    first, repeat = figures["first_count_ms"], figures["repeated_count_ms"]
    ratio = f" ({repeat / first:.0%} of the first)" if first > 0 else ""
    return Check("speed", INFO, f"chat {figures['chat_tokens_per_second']:,.0f} tokens/s, text "
                 f"{figures['text_tokens_per_second']:,.0f} tokens/s; the 200-message request: first count "
                 f"{first:.2f} ms, repeated {repeat:.2f} ms{ratio} (not judged)")
