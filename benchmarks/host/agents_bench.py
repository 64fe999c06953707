"""Ten agents, one process: Baton's per-call overhead with agents taking turns, against one agent alone.

    .venv/bin/python benchmarks/host/agents_bench.py [--quick] [--json]

A gateway or a delegating agent runs several Hermes agents in one process, each with its own Baton engine (Hermes
0.22: ``clone_for_agent``; 0.19: ``copy.deepcopy``), sharing the process runtime (settings, the Qwen3 hf
counter). Per API call Hermes asks what ``run.py``'s overhead row measures: the patched pre-API estimate of the
api messages, ``should_compress`` with it, then the ``llm_request`` middleware on the same messages, each from a
frame holding the calling agent (as Hermes' loop does). ``alone``: one agent makes ``rounds`` calls, then the
next one (``AGENTS`` sessions, one at a time); ``turns``: ``AGENTS`` agents with other sessions of the same sizes
call in rotation for ``rounds`` rounds. The ratio of the two medians is the figure (target <= 1.5x):
per-conversation state that every agent shares (a memo with a few chains) makes each agent's call redo its whole
history once the others have pushed it out.

Memory per agent (``tracemalloc``): what Baton retains for one more agent after its warm-up (its engine, memos
and ledger, and what it adds to the shared counter's caches), the histories themselves being Hermes'; and an
idle engine's copy (what ``clone_for_agent`` / ``deepcopy`` costs before the agent's first request).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

from benchmarks.harness import workload  # noqa: E402
from batontest.agent_frames import LoopAgent, in_agent  # noqa: E402
from batontest.assets import qwen3_dir  # noqa: E402

from baton_engine.settings import BatonSettings  # noqa: E402
from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "10 agents taking turns: 1.22x one agent alone per call (4.11x before per-agent memos)",
    "target": "<= 1.5x one agent alone",
    "findings": "Ten agents taking turns",
    "test": "tests/bench/test_agents_bench.py",
}

MODEL = "qwen3-local"
QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}
AGENTS = 10
TARGET_RATIO = 1.5


class Agent:
    """One Hermes agent as Baton sees it: its engine (a copy of the registered one), tools and stored history."""

    def __init__(self, template: Any, history: list[dict[str, Any]], upcoming: list[dict[str, Any]]) -> None:
        self.engine = clone(template)
        self.model = MODEL
        self.engine.update_model(MODEL, 10_000_000)
        self.loop = LoopAgent(self.engine, workload.TOOLS)
        self.stored = [SYSTEM, *history]
        self.upcoming = list(upcoming)

    def call(self, estimate: Any, middleware: Any, clock: Callable[[], float] = time.thread_time) -> float:
        """One API call of Hermes' loop after the next message arrived (if one is left); seconds by ``clock``, by
        default CPU seconds spent in Baton (this thread's: robust to the other load of a shared machine; the
        counting is single-threaded)."""
        from baton_engine.hermes.request_view import _sent_message

        if self.upcoming:
            self.stored.append(self.upcoming.pop(0))
        api_messages = [_sent_message(m) for m in self.stored]  # Hermes' per-call copies (outside the timing)
        request = {"model": self.model, "messages": api_messages, "tools": workload.TOOLS, "max_tokens": 4096}
        started = clock()
        tokens = in_agent(self.loop, estimate, api_messages)
        self.engine.should_compress(tokens)
        in_agent(self.loop, middleware, request=request, model=self.model)
        return clock() - started


def clone(template: Any) -> Any:
    """The per-agent engine the host makes: ``clone_for_agent`` where the engine has one (0.22), else deepcopy."""
    own = getattr(template, "clone_for_agent", None)
    return own() if callable(own) else copy.deepcopy(template)


def histories(count: int, turns: int, rounds: int, first_seed: int = 100) -> list[tuple[list[dict[str, Any]],
                                                                                      list[dict[str, Any]]]]:
    """``count`` different sessions: (the history before the timed calls, the messages the calls add)."""
    out = []
    for seed in range(count):
        messages = workload.session_of_turns(turns, seed=first_seed + seed, scale=0.3).messages()
        out.append((messages[:-rounds], messages[-rounds:]))
    return out


def _median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


def run(quick: bool) -> dict[str, Any]:
    from agent.model_metadata import estimate_messages_tokens_rough

    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.hermes.patches import Activation, ExactEstimators

    turns, rounds = (60, 10) if quick else (100, 20)
    runtime = BatonRuntime(BatonSettings(tokenizer=QWEN3))
    set_runtime(runtime)
    runtime.counter()
    estimate = ExactEstimators().messages_tokens(estimate_messages_tokens_rough)
    activation = Activation()
    activation.active = True  # the middleware without Hermes' module patches
    template = BatonContextEngine(project_dir=Path(tempfile.mkdtemp(prefix="baton-bench-agents-")))
    template.update_model(MODEL, 10_000_000)
    # alone and in turns run different sessions of the same sizes: no count of one is in the caches of the other
    sessions = histories(2 * AGENTS, turns, rounds + 2)

    def warmed(index: int) -> Agent:
        """An agent whose earlier turns were already requested (two calls: its memos hold its history)."""
        history, upcoming = sessions[index]
        agent = Agent(template, history, upcoming)
        agent.call(estimate, activation.llm_request)
        agent.call(estimate, activation.llm_request)
        return agent

    alone_samples: list[float] = []
    for index in range(AGENTS, 2 * AGENTS):  # each session alone in the process, one after the other
        alone = warmed(index)
        alone_samples += [alone.call(estimate, activation.llm_request) for _ in range(rounds)]
        del alone
    gc.collect()
    tracemalloc.start()
    baseline, before = tracemalloc.get_traced_memory()[0], tracemalloc.take_snapshot()
    agents = [warmed(i) for i in range(AGENTS)]
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - baseline
    by_place = _by_place(tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    turn_samples = [agent.call(estimate, activation.llm_request) for _ in range(rounds) for agent in agents]
    idle = _idle_clone_bytes(template)
    messages = len(agents[0].stored)
    history_bytes = _history_bytes(sessions[0][0])
    ratio = _median_ms(turn_samples) / _median_ms(alone_samples)
    result = {
        "agents": AGENTS, "rounds": rounds, "messages_per_agent": messages,
        "messages_per_round": sum(len(a.stored) for a in agents),
        "alone_p50_ms": _median_ms(alone_samples), "turns_p50_ms": _median_ms(turn_samples),
        "alone_max_ms": 1000 * max(alone_samples), "turns_max_ms": 1000 * max(turn_samples),
        "ratio": ratio, "target_met": ratio <= TARGET_RATIO,
        "retained_bytes_per_agent": retained // AGENTS, "history_bytes_per_agent": history_bytes,
        "retained_by_place": {place: size // AGENTS for place, size in by_place.items()},
        "idle_clone_bytes": idle, "clone": "clone_for_agent" if hasattr(template, "clone_for_agent") else "deepcopy",
    }
    runtime.close()
    set_runtime(None)
    return result


def _by_place(differences: list[tracemalloc.StatisticDiff]) -> dict[str, int]:
    """Retained bytes by where they were allocated: the largest few modules (the rest summed as "other")."""
    places: dict[str, int] = {}
    for diff in differences:
        parts = Path(diff.traceback[0].filename).parts
        place = "/".join(parts[-2:]) if len(parts) > 1 else parts[-1]
        places[place] = places.get(place, 0) + diff.size_diff
    top = dict(sorted(((p, s) for p, s in places.items() if s > 0), key=lambda item: -item[1])[:6])
    top["other"] = sum(places.values()) - sum(top.values())
    return top


def _idle_clone_bytes(template: Any) -> int:
    """What one per-agent engine costs before its first request (the host's clone of the registered engine)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    engines = [clone(template) for _ in range(AGENTS)]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del engines
    return (after - before) // AGENTS


def _history_bytes(history: list[dict[str, Any]]) -> int:
    """The traced size of one agent's history as Hermes holds it (the scale the retained figure compares to)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = json.loads(json.dumps(history))  # fresh strings too (a deepcopy shares them)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del held
    return after - before


def render(result: dict[str, Any]) -> list[str]:
    verdict = "met" if result["target_met"] else "NOT met"
    return [
        "## Ten agents taking turns (per-agent engines)", "",
        f"{result['agents']} agents with {result['messages_per_agent']} messages each "
        f"({result['messages_per_round']} messages per round), {result['rounds']} rounds; per-agent engines by "
        f"`{result['clone']}`. Per API call: pre-API estimate + should_compress + llm_request middleware.", "",
        "| run | p50 CPU ms / call | max CPU ms / call |", "|---|---:|---:|",
        f"| one agent alone | {result['alone_p50_ms']:.2f} | {result['alone_max_ms']:.2f} |",
        f"| {result['agents']} agents taking turns | {result['turns_p50_ms']:.2f} | {result['turns_max_ms']:.2f} |", "",
        f"Ratio {result['ratio']:.2f}x (target <= {TARGET_RATIO}x: {verdict}). Memory per agent: "
        f"{result['retained_bytes_per_agent'] / 1024:.0f} KiB retained by Baton after its warm-up (its history as "
        f"Hermes holds it: {result['history_bytes_per_agent'] / 1024:.0f} KiB); an idle engine copy "
        f"{result['idle_clone_bytes'] / 1024:.1f} KiB. Retained per agent by where it was allocated: "
        + ", ".join(f"{place} {size / 1024:.0f} KiB" for place, size in result["retained_by_place"].items()) + ".",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short histories, few rounds (the test's mode)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON after the table")
    args = parser.parse_args(argv)
    logging.getLogger("baton_engine").setLevel(logging.ERROR)
    result = run(args.quick)
    print("\n".join(render(result)))
    if args.json:
        print(json.dumps(result))
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
