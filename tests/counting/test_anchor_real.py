"""The anchored estimate against the real Qwen3 tokenizer on generated tool-heavy conversations (hypothesis)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, target
from hypothesis import strategies as st

from baton_engine.tokens.anchor import UsageAnchor
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.counter import TokenCounter, counting_mode
from baton_engine.tokens.rough import RoughBackend
from batontest.faulty_backends import LostTokenizer
from conversations import TOOLS, _sentence, conversation

pytest.importorskip("baton_hf")

WORDS = "parser cache retry module build test schema token budget ledger invoice shard replica worker".split()
SYSTEM = {"role": "system", "content": "You are a coding agent working in a git repository. Use the tools."}


@pytest.fixture(scope="module")
def qwen3() -> Any:
    from batontest.assets import qwen3_dir

    from baton_engine.tokens.plugins import build_backend

    return build_backend(TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B"))[0]


def tool_output(kind: str, size: int, rng: random.Random) -> str:
    """What agent tools return: logs, source, search hits, JSON, prose (with the corpus' non-Latin words)."""
    if kind == "log":
        return "\n".join(f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:{rng.randint(0, 59):02d}Z "
                         f"INFO worker[{rng.randint(1, 64)}] {' '.join(rng.choices(WORDS, k=8))} "
                         f"({rng.randint(1, 999)} ms)" for _ in range(size))
    if kind == "code":
        return "\n".join(f"def {rng.choice(WORDS)}_{n}(record: dict, limit: int = {rng.randint(1, 500)}) -> int:\n"
                         f"    total = record.get({rng.choice(WORDS)!r}, 0)\n    if total > limit:\n"
                         f"        return limit - {rng.randint(0, 9)}\n    return total\n" for n in range(size))
    if kind == "search":
        return "\n".join(f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: "
                         f"{' '.join(rng.choices(WORDS, k=6))}" for _ in range(size))
    if kind == "json":
        return json.dumps([{"id": rng.randint(0, 10**6), "name": rng.choice(WORDS), "ok": rng.random() > 0.5,
                            "lag": round(rng.random() * 100, 3)} for _ in range(size)])
    return "\n".join(_sentence(rng, 10, 40) for _ in range(size))


turns = st.lists(
    st.tuples(st.lists(st.tuples(st.sampled_from(["log", "code", "search", "json", "prose"]), st.integers(1, 60)),
                       min_size=1, max_size=3),
              st.integers(0, 2**32)),
    min_size=2, max_size=10,
)


def model_calls(spec: list[tuple[list[tuple[str, int]], int]]) -> list[dict[str, Any]]:
    """The requests of a session: with the user message, then after the tool results, per turn."""
    history: list[dict[str, Any]] = [SYSTEM]
    requests = []
    for index, (calls, seed) in enumerate(spec):
        rng = random.Random(seed)
        history.append({"role": "user", "content": _sentence(rng, 5, 30)})
        requests.append({"messages": list(history), "tools": TOOLS})
        tool_calls = [{"id": f"c{index}_{n}", "type": "function",
                       "function": {"name": "shell", "arguments": json.dumps({"command": rng.choice(WORDS)})}}
                      for n in range(len(calls))]
        history.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        history += [{"role": "tool", "tool_call_id": call["id"], "content": tool_output(kind, size, rng)}
                    for call, (kind, size) in zip(tool_calls, calls)]
        requests.append({"messages": list(history), "tools": TOOLS})
        history.append({"role": "assistant", "content": _sentence(rng, 5, 40)})
    return requests


# "Never undercounts" is too strong: a session of code and logs followed by one turn of ~140 numeric JSON records
# (far more tokens per character than anything before it) beats any fixed margin share. A 300-example search
# targeting the undercount (hypothesis.target) found at most 1.9% of the request with the default k; the
# benchmark's workloads undercount 0 of 714 requests. The bound asserted here is the measured one plus headroom.
MAX_UNDERCOUNT_SHARE = 0.03
WORST_FOUND = [([("prose", 8)], 234), ([("log", 38)], 615), ([("code", 58), ("search", 52), ("log", 30)], 22218021),
               ([("prose", 20), ("log", 25)], 672014), ([("code", 52)], 2585), ([("code", 14)], 6969),
               ([("json", 18), ("json", 60), ("json", 60)], 0)]  # undercounts its last request by 1.87%


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns)
@example(spec=WORST_FOUND)
def test_anchored_estimate_with_the_default_margin_stays_within_the_measured_bound_on_qwen3(
        qwen3: Any, spec: list) -> None:
    """No tokenizer at all (the rough backend), provider usage observed after every request."""
    counter = TokenCounter(RoughBackend(), cache_size=0)
    anchor = UsageAnchor()
    worst = 0.0
    for request in model_calls(spec):
        exact = qwen3.count_chat(request).tokens
        counted = counter.count_chat(request, anchor)
        if counted.source == "anchored":
            worst = max(worst, (exact - counted.tokens) / exact)
        anchor.observe_exact(request, exact)
    target(worst)
    assert worst <= MAX_UNDERCOUNT_SHARE


@pytest.mark.parametrize("seed", range(8))
def test_tokenizer_lost_mid_session_anchored_counts_cover_qwen3(qwen3: Any, seed: int) -> None:
    """The counting test corpus (prose with non-Latin text, tool calls): exact until the tokenizer goes, then
    anchored on the provider's usage; no anchored count is below the exact one and the breaker asks once."""
    conversation_request = conversation(12, seed=seed)
    messages = conversation_request["messages"]
    requests = [{"messages": messages[:n], "tools": TOOLS} for n in range(2, len(messages) + 1)
                if not messages[n - 1].get("tool_calls")]
    lost = LostTokenizer(qwen3, len(requests) // 2)
    counter = TokenCounter(lost, cache_size=0, clock=lambda: 0.0)  # the breaker stays open: no probe
    anchor = UsageAnchor()
    modes = []
    for request in requests:
        exact = qwen3.count_chat(request).tokens
        counted = counter.count_chat(request, anchor)
        modes.append(counting_mode(counted))
        assert counted.tokens >= exact
        anchor.observe_exact(request, exact)  # usage.prompt_tokens of the request just sent
    half = len(requests) // 2
    assert modes == ["exact"] * half + ["anchored"] * (len(requests) - half)
    assert lost.left == -1  # one failed call; the open breaker answered every later count
