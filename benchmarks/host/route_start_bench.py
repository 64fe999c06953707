"""Eight agents, one process: does one agent's slow tokenizer start or looping chat template hold up the others?

    .venv/bin/python benchmarks/host/route_start_bench.py [--quick] [--json]

Two parts, one run:

``count time``: the hf backend (the real Qwen3 tokenizer) counting the largest realistic prompt cold (every memo
dropped before each count: the worst case, a compaction's or a resumed session's first count) ``samples`` times;
the in-process count deadline (``tokens/breaker.LOCAL_COUNT_DEADLINE_SECONDS``) is chosen from its tail.

``agents``: 8 agents (threads, each its own engine over the process runtime, as Hermes' gateway runs them) make
API calls as Hermes' loop does (the patched pre-API estimate, ``should_compress``, the ``llm_request``
middleware, from a frame holding the agent), each call followed by a pause standing for the model's reply. Run
four times in the same process (``PHASES``): all 8 stay on the configured Qwen3 route; agent 7 switches
(``update_model``) to a route whose hf tokenizer must load first (a fresh copy of Qwen3, a real load); agent 8
switches to one whose chat template loops for hours (``batontest.assets.looping_template_dir``); both. The
figure: the other 6 agents' per-call wall time p99 in each run over the first's (target <= 1.5x for both).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

from benchmarks.harness import workload  # noqa: E402
from benchmarks.host import agents_bench  # noqa: E402
from batontest.assets import LOOP_TRIGGER, hf_backend, looping_template_dir, qwen3_dir  # noqa: E402
from benchmarks.harness.percentiles import percentile  # noqa: E402

from baton_engine.settings import BatonSettings, TokenizerRoute  # noqa: E402
from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402
from baton_engine.tokens.rough import estimate_chat_request  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("a tokenizer's slow start and a looping template beside 6 other agents: their p99 2.46x"
               " a run without them"),
    "target": "one agent's start never stalls the others",
    "findings": "One agent's tokenizer start",
    "test": None,
}

MODEL, SLOW_MODEL, LOOP_MODEL = "qwen3-local", "slow-start-model", "looping-template-model"
QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
SYSTEM = {"role": "system", "content": workload.SYSTEM_PROMPT}
AGENTS = 8
TARGET_RATIO = 1.5
LARGEST_PROMPT_TOKENS = 120_000  # a 128k window's prompt, the room for a reply left


def count_times(samples: int) -> dict[str, Any]:
    """Cold counts of the largest realistic prompt on the hf backend: seconds each."""
    backend = hf_backend(qwen3_dir())
    session = workload.sized_session(LARGEST_PROMPT_TOKENS, lambda ms: estimate_chat_request({"messages": ms}))
    request = {"messages": [SYSTEM, *session.messages()], "tools": workload.TOOLS}
    seconds, tokens = [], 0
    for _ in range(samples):
        backend.clear_cache()
        started = time.perf_counter()
        tokens = backend.count_chat(request).tokens
        seconds.append(time.perf_counter() - started)
    return {"samples": samples, "tokens": tokens, "p50_s": statistics.median(seconds),
            "p99_s": percentile(seconds, 0.99), "p999_s": percentile(seconds, 0.999), "max_s": max(seconds)}


class Agent(agents_bench.Agent):
    """One Hermes agent as Baton sees it (``agents_bench.Agent``), its calls timed in wall seconds, and switchable."""

    def __init__(self, template: Any, history: list[dict[str, Any]], upcoming: list[dict[str, Any]]) -> None:
        super().__init__(template, history, upcoming)
        self.samples: list[float] = []

    def switch(self, model: str, note: str = "") -> None:
        """Hermes' ``/model``: the engine's ``update_model``; ``note`` a user message the next calls carry."""
        self.model = model
        self.engine.update_model(model, 10_000_000)
        if note:
            self.stored.append({"role": "user", "content": note})

    def call(self, estimate: Any, middleware: Any, clock: Callable[[], float] = time.perf_counter) -> float:
        seconds = super().call(estimate, middleware, clock)
        self.samples.append(seconds)
        return seconds


def agents_phase(name: str, slow: bool, loop: bool, calls: int, pause: float, turns: int,
                 work: Path) -> dict[str, Any]:
    """One run of the 8 agents: with ``slow`` agent 7 switches to the route whose tokenizer must load first; with
    ``loop`` agent 8 to the route whose chat template loops (its tokenizer started before the calls when ``slow``
    is off, so the run shows the loop alone)."""
    from agent.model_metadata import estimate_messages_tokens_rough

    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.hermes.patches import Activation, ExactEstimators

    slow_dir = work / f"slow-{name}"
    shutil.copytree(qwen3_dir(), slow_dir, dirs_exist_ok=True)  # its own path: a tokenizer not loaded yet
    routes = (TokenizerRoute(TokenizerConfig(backend="hf", path=str(slow_dir), model=SLOW_MODEL), model=SLOW_MODEL),
              TokenizerRoute(TokenizerConfig(backend="hf", path=str(looping_template_dir(work / f"loop-{name}")),
                                             model=LOOP_MODEL), model=LOOP_MODEL))
    runtime = BatonRuntime(BatonSettings(tokenizer=QWEN3, tokenizer_routes=routes))
    set_runtime(runtime)
    runtime.counter()
    estimate = ExactEstimators().messages_tokens(estimate_messages_tokens_rough)
    activation = Activation()
    activation.active = True  # the middleware without Hermes' module patches
    template = BatonContextEngine(project_dir=Path(tempfile.mkdtemp(prefix="baton-bench-start-", dir=work)))
    template.update_model(MODEL, 10_000_000)
    agents = []
    for history, upcoming in agents_bench.histories(AGENTS, turns, calls + 2, first_seed=300):
        agent = Agent(template, history, upcoming)
        agent.call(estimate, activation.llm_request)
        agent.call(estimate, activation.llm_request)
        agent.samples.clear()
        agents.append(agent)
    if slow:
        agents[-2].switch(SLOW_MODEL)
    if loop:
        agents[-1].switch(LOOP_MODEL, f"Carry on. {LOOP_TRIGGER}")
        if not slow:
            runtime.for_route(LOOP_MODEL).counter()
    go = threading.Barrier(AGENTS)

    def run(agent: Agent) -> None:
        go.wait()
        for _ in range(calls):
            agent.call(estimate, activation.llm_request)
            time.sleep(pause)  # the model's reply

    threads = [threading.Thread(target=run, args=(agent,)) for agent in agents]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    others = [sample for agent in agents[:-2] for sample in agent.samples]
    statuses = [agent.engine.get_status()["tokenizer"] for agent in agents[-2:]]
    result = {
        "name": name, "calls": len(others), "wall_s": wall, "p50_ms": 1000 * statistics.median(others),
        "p99_ms": 1000 * percentile(others, 0.99), "max_ms": 1000 * max(others),
        "switched_first_call_ms": [1000 * agent.samples[0] for agent in agents[-2:]],
        "switched_counter": [status.get("counter") for status in statuses],
        "switched_source": [status.get("source") for status in statuses],
    }
    runtime.close()
    set_runtime(None)
    return result


PHASES = (("all 8 on Qwen3", False, False), ("agent 7 slow start", True, False),
          ("agent 8 looping template (its tokenizer already started)", False, True),
          ("agent 7 slow start, agent 8 looping template", True, True))


def run(quick: bool) -> dict[str, Any]:
    samples, calls, turns = (20, 60, 40) if quick else (200, 150, 60)
    with tempfile.TemporaryDirectory(prefix="baton-route-start-") as tmp:
        work = Path(tmp)
        phases = [agents_phase(f"{index}", slow, loop, calls, 0.1, turns, work)
                  for index, (_, slow, loop) in enumerate(PHASES)]
    for phase, (name, _, _) in zip(phases, PHASES):
        phase["name"] = name
        phase["ratio"] = phase["p99_ms"] / phases[0]["p99_ms"]
    times = count_times(samples)
    ratio = phases[-1]["ratio"]
    return {"agents": AGENTS, "count_time": times, "phases": phases, "ratio": ratio,
            "target_met": ratio <= TARGET_RATIO}


def render(result: dict[str, Any]) -> list[str]:
    times, with_ = result["count_time"], result["phases"][-1]
    verdict = "met" if result["target_met"] else "NOT met"
    return [
        "## One agent's tokenizer start or looping template, seven others", "",
        f"Cold hf count of the largest realistic prompt ({times['tokens']:,} tokens), {times['samples']} samples: "
        f"p50 {times['p50_s']:.2f} s, p99 {times['p99_s']:.2f} s, p99.9 {times['p999_s']:.2f} s, "
        f"max {times['max_s']:.2f} s.", "",
        f"{result['agents']} agents; per API call: pre-API estimate + should_compress + llm_request middleware "
        "(wall time), a 100 ms pause between calls for the model's reply.", "",
        "| run | calls (6 others) | p50 ms / call | p99 ms / call | max ms / call | p99 ratio | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {run['name']} | {run['calls']} | {run['p50_ms']:.1f} | {run['p99_ms']:.1f} | {run['max_ms']:.1f} | "
          f"{run['ratio']:.2f}x | {run['wall_s']:.1f} |" for run in result["phases"]), "",
        f"p99 ratio with both {result['ratio']:.2f}x (target <= {TARGET_RATIO}x: {verdict}). The switched agents' first call "
        f"after the switch: {', '.join(f'{ms:.0f} ms' for ms in with_['switched_first_call_ms'])}; their counters "
        f"at the end: {', '.join(str(state) for state in with_['switched_counter'])} "
        f"({'; '.join(str(source) for source in with_['switched_source'])}).",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples and calls")
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
