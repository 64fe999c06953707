"""What a hanging tokenizer costs behind the circuit breaker, and which cool-off to default to.

    .venv/bin/python benchmarks/tokens/breaker_bench.py

1. The healthy cost of a probe: /tokenize latency of a 200-message tool-using request on the vLLM stand-in
   (``tests/batontest/vllm_standin.py``, real Qwen3 template), straight through the vllm backend (no cache).
2. A tokenizer that hangs for 30 minutes of wall time, each call costing the default 10 s timeout, with a count
   every 5 s of agent work (Hermes counts about twice per model call: pre-flight and middleware) and every 20 s:
   the timeouts, the wall time they cost and its share, per cool-off (with and without doubling back-off), through
   the real ``CircuitBreaker`` on a simulated clock; and how long after a 60 s or 10-minute outage ends counting is
   exact again.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "counting")]

from baton_engine.tokens.breaker import (  # noqa: E402
    DEFAULT_COOL_OFF_SECONDS,
    DEFAULT_MAX_COOL_OFF_SECONDS,
    CircuitBreaker,
)
from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("a 30-minute tokenizer hang costs 8 timeouts (80 s, 4.4% of wall time) instead of 120 "
               "(67%); a healthy probe ~25 ms"),
    "target": "the cool-off defaults (60 s doubling to 300 s) chosen from it",
    "findings": "Figures behind the code's constants",
    "test": None,
}

TIMEOUT = 10.0  # BATON_TOKENIZER_TIMEOUT_SECONDS default
SESSION = 30 * 60.0
CANDIDATES = [(None, None), (10.0, 10.0), (30.0, 30.0), (60.0, 60.0), (10.0, 300.0), (30.0, 300.0), (60.0, 300.0),
              (60.0, 600.0)]


class SimulatedTokenizer(TokenizerBackend):
    """Hangs (advancing the simulated clock by the timeout, then failing) while ``down(now)``; else counts."""

    def __init__(self, clock: list[float], down: Any) -> None:
        self.clock, self.down, self.timeouts = clock, down, 0

    @property
    def source(self) -> str:
        return "simulated"

    def count_chat(self, request: ChatRequest) -> TokenCount:
        if self.down(self.clock[0]):
            self.clock[0] += TIMEOUT
            self.timeouts += 1
            raise CannotCount(f"did not answer within {TIMEOUT:g} s")
        return TokenCount(1, True, self.source)

    def count_text(self, text: str) -> TokenCount:
        return self.count_chat({"messages": []})


def simulate(cool_off: float | None, max_cool_off: float | None, interval: float, down: Any,
             until: float) -> tuple[SimulatedTokenizer, list[tuple[float, bool]]]:
    """Counts every ``interval`` s of agent time until ``until``; returns the tokenizer and (time, exact?) per count."""
    clock = [0.0]
    tokenizer = SimulatedTokenizer(clock, down)
    backend: TokenizerBackend = tokenizer if cool_off is None else CircuitBreaker(
        tokenizer, cool_off_seconds=cool_off, max_cool_off_seconds=max_cool_off, clock=lambda: clock[0])  # type: ignore[arg-type]
    log = []
    while clock[0] < until:
        try:
            backend.count_chat({"messages": []})
            log.append((clock[0], True))
        except CannotCount:
            log.append((clock[0], False))
        clock[0] += interval
    return tokenizer, log


def label(cool_off: float | None, max_cool_off: float | None) -> str:
    if cool_off is None:
        return "no breaker (today)"
    return f"{cool_off:g} s" + (f", doubling to {max_cool_off:g} s" if max_cool_off != cool_off else "")


def section_probe_cost() -> float:
    from batontest.vllm_standin import VllmStandin
    from conversations import conversation_of_messages

    from baton_engine.tokens.contract import TokenizerConfig
    from baton_vllm import VllmBackend

    request = conversation_of_messages(200)
    with VllmStandin() as server:
        backend = VllmBackend(TokenizerConfig(url=server.url, model=server.model_name))
        backend.count_chat(request)  # connection set-up outside the timing
        times = []
        for _ in range(7):
            started = time.perf_counter()
            counted = backend.count_chat(request)
            times.append(time.perf_counter() - started)
        backend.close()
    median = statistics.median(times)
    print(f"## 1. Healthy probe: /tokenize of a 200-message request ({counted.tokens} tokens) on the stand-in\n")
    print(f"median {1000 * median:.0f} ms, min {1000 * min(times):.0f} ms, max {1000 * max(times):.0f} ms (7 calls)\n")
    return median


def section_hang() -> None:
    print(f"## 2. A tokenizer hanging for {SESSION / 60:g} minutes ({TIMEOUT:g} s timeout per call)\n")
    print("| cool-off | count every | timeouts | wall time lost | share of wall time | share in the first minute "
          "| exact again after a 60 s / 10 min outage |")
    print("|---|---|---|---|---|---|---|")
    for interval in (5.0, 20.0):
        for cool_off, max_cool_off in CANDIDATES:
            tokenizer, _ = simulate(cool_off, max_cool_off, interval, lambda now: True, SESSION)
            lost = tokenizer.timeouts * TIMEOUT
            first, _ = simulate(cool_off, max_cool_off, interval, lambda now: True, 60.0)
            first_lost = first.timeouts * TIMEOUT
            lags = []
            for outage in (60.0, 600.0):
                _, log = simulate(cool_off, max_cool_off, interval, lambda now, end=outage: now < end, outage + 900.0)
                lags.append(max(0.0, next(t for t, exact in log if exact) - outage))
            print(f"| {label(cool_off, max_cool_off)} | {interval:g} s | {tokenizer.timeouts} | {lost:g} s | "
                  f"{100 * lost / SESSION:.1f}% | {100 * min(first_lost, 60.0) / 60.0:.0f}% | "
                  f"{lags[0]:.0f} s / {lags[1]:.0f} s |")
    print(f"\ndefault: {label(DEFAULT_COOL_OFF_SECONDS, DEFAULT_MAX_COOL_OFF_SECONDS)}")


def main() -> int:
    print("# Circuit breaker benchmark\n")
    section_probe_cost()
    section_hang()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
