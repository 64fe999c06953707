"""Compare the backend's count_text with raw tiktoken on 1 MB of English + code (target: within 25%).

Run: python backends/tiktoken/benchmarks/speed.py  -> prints a Markdown table.
"""

from __future__ import annotations

import statistics
import time

from baton_engine.tokens.contract import TokenizerConfig

from baton_tiktoken.backend import TiktokenBackend
from baton_tiktoken.encodings import load_encoding

SAMPLE = (
    "The quick brown fox jumps over the lazy dog. It's 2024, and we're counting tokens exactly.\n"
    "def count(items: list[str]) -> int:\n    return sum(len(item) for item in items)  # total\n\n"
)
TEXT = (SAMPLE * (1_000_000 // len(SAMPLE) + 1))[:1_000_000]


def median_seconds(fn, repeats: int = 7) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    print("| encoding | raw tiktoken (ms) | backend count_text (ms) | ratio |")
    print("|---|---|---|---|")
    for name in ("o200k_base", "cl100k_base"):
        raw = load_encoding(name)
        backend = TiktokenBackend.from_config(TokenizerConfig(backend="tiktoken", model=name))
        assert backend.count_text(TEXT).tokens == len(raw.encode_ordinary(TEXT))
        raw_s = median_seconds(lambda: raw.encode_ordinary(TEXT))
        ours_s = median_seconds(lambda: backend.count_text(TEXT))
        print(f"| {name} | {raw_s * 1000:.1f} | {ours_s * 1000:.1f} | {ours_s / raw_s:.2f} |")


if __name__ == "__main__":
    main()
