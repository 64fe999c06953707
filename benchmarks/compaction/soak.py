"""Soak at scale (issue 13, item 6): fuzzed ``compress()`` on the real engine, SIGKILLs on the store's write paths.

    python benchmarks/compaction/soak.py [--quick] [--out benchmarks/results]

Run by ``scripts/bench.sh`` after ``run.py``; not part of CI, whose tests keep the smaller versions
(``tests/agent_core/test_compaction_fuzz.py``: one agent's ``compact`` through a fake host, the cycle this engine's
``compress`` hands its list to; ``tests/store/test_store_soak.py``). Both share the transcript strategies and
output checks (``tests/compaction/conversations.py``) and the store cycle and store checks
(``tests/batontest/store_cycle.py``), so "valid", "partial" and "lost" mean the same thing here and in CI.

Writes ``soak.json`` (figures only, gitignored) and re-renders ``REPORT.md`` when ``results.json`` is there.
Two lanes (the machine's two cores), each a forked process with its own git project and fixed seed.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
for _name in [n for n in os.environ if n.startswith("BATON_") and n != "BATON_TOKENIZER_CACHE"]:
    del os.environ[_name]  # the soak sets every setting itself
_HERMES_HOME = tempfile.mkdtemp(prefix="baton-soak-hermes-")
os.environ["HERMES_HOME"] = _HERMES_HOME  # before any Hermes import

from batontest.hermes_home import git_project  # noqa: E402
from batontest.store_cycle import Confirmed, check_store, cycle, lock_recovery_seconds  # noqa: E402

from baton_engine.operations.handoffs import init  # noqa: E402
from benchmarks.harness.machine import commit  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("10,000 fuzzed compress() calls: 0 exceptions, 0 invalid outputs; 1,200 SIGKILLs of "
               "store writers: 0 partial or lost records"),
    "target": ">= 10,000 calls and >= 1,000 kills with 0 failures",
    "findings": 9,
    "test": "tests/agent_core/test_compaction_fuzz.py",
}

LANES = 2
COMPRESS_CALLS = 10_000  # target: >= 10,000 fuzzed compress() calls
KILLS = 1_200  # target: >= 1,000 SIGKILLs; half at a random time, half at an injected write step
PROJECT_ROTATION = 250  # calls / kills per git project: a store of thousands of records only slows the listing
WINDOWS = (4096, 16384, 65536)  # context lengths drawn per call: small ones force deep cuts and stubs
LOCK_TIMEOUT_SECONDS = 5.0
INJECTED_CALLS = ("fsync", "replace", "unlink")  # the syscalls of store.atomic_write and save()
KEPT_FAILURES = 5


def _project(prefix: str) -> Path:
    root = git_project(Path(tempfile.mkdtemp(prefix=prefix)) / "project", {"README.md": "# soak\n"})
    init(root)
    return root


def _drop(project: Path) -> None:
    shutil.rmtree(project.parent, ignore_errors=True)


# ---- (a) fuzzed compress() -----------------------------------------------------------------------------------

def _runtime(backend: str) -> Any:
    from batontest.assets import qwen3_dir, tiktoken_encoding_file

    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.config import HermesView
    from baton_engine.settings import BatonSettings
    from baton_engine.tokens.contract import TokenizerConfig

    config = (TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B") if backend == "hf" else
              TokenizerConfig(backend="tiktoken", model="gpt-4o", path=str(tiktoken_encoding_file("o200k_base"))))
    runtime = BatonRuntime(BatonSettings(tokenizer=config), HermesView(engine="baton", model="soak"))
    runtime.counter()
    set_runtime(runtime)
    return runtime


def invalid_reason(messages: Any, result: Any, engine: Any) -> str | None:
    """Why ``result`` is not a valid compaction of ``messages`` (None: valid). Valid = the CI fuzz test's
    checks (pair-safe OpenAI shape, the latest real user request kept, JSON-serialisable), the strict-server
    check of the loopback model server, no internal error, and a Baton message (block, continuation notice or
    degradation note) whenever there was a conversation to compact."""
    from batontest.model_server import protocol_problem
    from compaction.conversations import assert_good_result, is_ours

    try:
        assert_good_result(messages, result)
    except AssertionError as exc:
        return f"fuzz check: {str(exc).splitlines()[0] if str(exc) else 'assertion'}"
    if engine.compaction.degradation_reason == "internal_error":
        return f"internal error ({engine.compaction.degradation_detail})"
    conversation = [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant", "tool")]
    if conversation:
        problem = protocol_problem(result)
        if problem is not None:
            return f"strict server: {problem}"
        if not any(isinstance(m, dict) and is_ours(m) for m in result):
            return "no Baton block, notice or degradation note in the result"
    return None


def fuzz_lane(lane: int, calls: int, backend: str) -> dict[str, Any]:
    """``calls`` compress() calls on transcripts drawn by hypothesis with a fixed seed; counts, never stops."""
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    from baton_engine.hermes.engine import BatonContextEngine
    from compaction.conversations import conversations, hostile_conversations, run_compress

    _runtime(backend)
    figures: dict[str, Any] = {"lane": lane, "backend": backend, "calls": 0, "exceptions": 0, "invalid": 0,
                               "degraded": Counter(), "handoffs": 0, "failures": [], "max_input_chars": 0}
    project = {"path": _project("baton-soak-fuzz-"), "calls": 0}
    durations: list[tuple[float, int]] = []
    transcripts = st.one_of(hostile_conversations(), conversations(), conversations(clean=True), st.just([]))

    @seed(20261201 + 2 * lane + (backend == "hf"))
    @settings(max_examples=calls, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(messages=transcripts, window=st.sampled_from(WINDOWS),
           focus=st.one_of(st.none(), st.just(""), st.text(max_size=30)), force=st.booleans())
    def one(messages: list[Any], window: int, focus: str | None, force: bool) -> None:
        if figures["calls"] >= calls:
            return
        if project["calls"] >= PROJECT_ROTATION:
            _drop(project["path"])
            project.update(path=_project("baton-soak-fuzz-"), calls=0)
        project["calls"] += 1
        figures["calls"] += 1
        size = len(json.dumps(messages, default=repr))
        figures["max_input_chars"] = max(figures["max_input_chars"], size)
        problem = None
        began = time.perf_counter()
        try:
            engine = BatonContextEngine(project_dir=project["path"])
            engine.update_model("soak", window)
            result = run_compress(engine, messages, focus, force=force)
            problem = invalid_reason(messages, result, engine)
            figures["degraded"][engine.compaction.degradation_reason or "none"] += 1
            figures["handoffs"] += engine.compression_count
        except AssertionError as exc:  # run_compress: the caller's list was mutated
            problem = f"input: {exc}"
            figures["invalid"] += 1
        except Exception as exc:  # noqa: BLE001 - counted, with its place, never raised: the soak goes on
            problem = f"{type(exc).__name__} at {traceback.extract_tb(exc.__traceback__)[-1].name}"
            figures["exceptions"] += 1
        else:
            figures["invalid"] += problem is not None
        durations.append((time.perf_counter() - began, size))
        if problem is not None:
            if len(figures["failures"]) < KEPT_FAILURES:
                figures["failures"].append({"problem": problem, "call": figures["calls"], "input_chars": size})

    started = time.monotonic()
    one()
    _drop(project["path"])
    figures["seconds"] = time.monotonic() - started
    figures["degraded"] = dict(figures["degraded"])
    ordered = sorted(durations)
    figures["call_ms"] = {"p50": 1000 * ordered[len(ordered) // 2][0], "p99": 1000 * ordered[int(len(ordered) * 0.99)][0],
                          "max": 1000 * ordered[-1][0]}
    figures["slowest_input_chars"] = ordered[-1][1]
    return figures


# ---- (b) SIGKILL on capture / record / ready ------------------------------------------------------------------

def _child(root: Path, tag: str, write_fd: int, inject_at: int | None) -> None:
    """A writer running store cycles until killed (or until it kills itself at its ``inject_at``-th store
    syscall, just before it runs: mid-rename, between fsyncs, holding the lock)."""
    os.setpgid(0, 0)

    def note(line: str) -> None:
        os.write(write_fd, (line + "\n").encode())

    if inject_at is not None:
        steps = itertools.count(1)

        def step() -> None:
            if next(steps) == inject_at:
                os.kill(os.getpid(), signal.SIGKILL)

        _hook_syscalls(step)
    try:
        for number in range(1_000_000):
            cycle(root, tag, number, note)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which counts it
        note(f"error {type(exc).__name__}")
        os._exit(3)
    os._exit(0)


def _hook_syscalls(before: Callable[[], Any]) -> dict[str, Any]:
    """Run ``before()`` ahead of every store syscall (``INJECTED_CALLS``); returns the originals."""
    originals = {name: getattr(os, name) for name in INJECTED_CALLS}
    for name, original in originals.items():
        def hooked(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            before()
            return _original(*args, **kwargs)

        setattr(os, name, hooked)
    return originals


def _syscalls_per_cycle(root: Path) -> tuple[int, float]:
    """How many store syscalls one cycle makes, and how long it takes (for drawing kill points)."""
    calls = itertools.count()
    originals = _hook_syscalls(lambda: next(calls))
    try:
        started = time.monotonic()
        cycle(root, "probe", 0, lambda line: None)
        seconds = time.monotonic() - started
    finally:
        for name, original in originals.items():
            setattr(os, name, original)
    return next(calls), seconds


def kill_lane(lane: int, kills: int) -> dict[str, Any]:
    rng = random.Random(20261201 + lane)
    figures: dict[str, Any] = {"lane": lane, "kills": 0, "timed": 0, "injected": 0, "by_phase": Counter(),
                               "partial": 0, "lost": 0, "lock_stuck": 0, "lock_max_ms": 0.0, "child_errors": 0,
                               "confirmed_writes": 0, "records_checked": 0, "temp_files_max": 0, "problems": []}
    started = time.monotonic()
    project, confirmed, used = _project("baton-soak-kill-"), Confirmed(), 0
    for _ in range(3):
        _syscalls_per_cycle(project)  # warm (imports, git); then measure
    syscalls, cycle_seconds = _syscalls_per_cycle(project)
    figures.update(syscalls_per_cycle=syscalls, cycle_ms=1000 * cycle_seconds)
    for number in range(kills):
        if used >= PROJECT_ROTATION:
            _drop(project)
            project, confirmed, used = _project("baton-soak-kill-"), Confirmed(), 0
        used += 1
        injected = number % 2 == 1
        inject_at = rng.randint(1, 2 * syscalls) if injected else None  # anywhere in the first two cycles
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(project, f"l{lane}k{number}", write_fd, inject_at)
        os.close(write_fd)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also in the parent: the group must exist before a kill (the child may be late)
        if injected:  # it kills itself; a child that never reaches its step is killed after 30 s
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
                time.sleep(0.002)
        else:
            time.sleep(rng.uniform(0, 2 * cycle_seconds))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # the writer and any git child it was running
        with contextlib.suppress(ChildProcessError):  # already reaped when it killed itself
            os.waitpid(pid, 0)
        output = b""
        while chunk := os.read(read_fd, 65536):
            output += chunk
        os.close(read_fd)
        text = output.decode()
        if "error " in text:
            figures["child_errors"] += 1
            figures["problems"].append(text.strip().splitlines()[-1])
        before = len(confirmed.drafts) + len(confirmed.items) + len(confirmed.ready)
        phase = confirmed.add(text)
        figures["confirmed_writes"] += len(confirmed.drafts) + len(confirmed.items) + len(confirmed.ready) - before
        figures["kills"] += 1
        figures["injected" if injected else "timed"] += 1
        figures["by_phase"][phase or "before any write"] += 1
        check = check_store(project, confirmed)
        figures["records_checked"] += check.records
        figures["partial"] += len(check.partial)
        figures["lost"] += len(check.lost)
        figures["temp_files_max"] = max(figures["temp_files_max"], check.temp_files)
        figures["problems"] += (check.partial + check.lost)[: max(0, KEPT_FAILURES - len(figures["problems"]))]
        waited = lock_recovery_seconds(project, LOCK_TIMEOUT_SECONDS)
        if waited is None:
            figures["lock_stuck"] += 1
        else:
            figures["lock_max_ms"] = max(figures["lock_max_ms"], 1000 * waited)
    _drop(project)
    figures["seconds"] = time.monotonic() - started
    figures["by_phase"] = dict(figures["by_phase"])
    return figures


# ---- both, two lanes each -------------------------------------------------------------------------------------

def _lane(job: tuple[str, int, int, str]) -> dict[str, Any]:
    kind, lane, amount, backend = job
    return fuzz_lane(lane, amount, backend) if kind == "fuzz" else kill_lane(lane, amount)


def _sum(lanes: list[dict[str, Any]], key: str) -> Any:
    values = [lane[key] for lane in lanes]
    if isinstance(values[0], dict):
        total: Counter[str] = Counter()
        for value in values:
            total.update(value)
        return dict(total)
    return sum(values)


def run(quick: bool) -> dict[str, Any]:
    calls, kills = (400, 60) if quick else (COMPRESS_CALLS, KILLS)
    backends = ("hf", "tiktoken")  # half the calls each: the real Qwen3 template, and the o200k counter
    started = time.monotonic()
    context = multiprocessing.get_context("fork")  # lanes and writers start from this loaded interpreter
    with context.Pool(LANES, maxtasksperchild=1) as pool:
        jobs = [("fuzz", i, calls // (2 * LANES), backend) for i in range(LANES) for backend in backends]
        fuzz = pool.map(_lane, jobs, chunksize=1)
        fuzz_seconds = time.monotonic() - started
        killed = pool.map(_lane, [("kill", i, kills // LANES, "") for i in range(LANES)], chunksize=1)
        kill_seconds = time.monotonic() - started - fuzz_seconds
    compress = {key: _sum(fuzz, key) for key in ("calls", "exceptions", "invalid", "handoffs", "degraded")}
    compress.update(seconds=fuzz_seconds, lanes=fuzz,
                    call_ms={key: max(lane["call_ms"][key] for lane in fuzz) for key in ("p50", "p99", "max")},
                    failures=[f for lane in fuzz for f in lane["failures"]][:KEPT_FAILURES],
                    max_input_chars=max(lane["max_input_chars"] for lane in fuzz), target_calls=COMPRESS_CALLS)
    store = {key: _sum(killed, key) for key in ("kills", "timed", "injected", "by_phase", "partial", "lost",
                                                 "lock_stuck", "child_errors", "confirmed_writes",
                                                 "records_checked")}
    store.update(seconds=kill_seconds, lanes=killed, target_kills=KILLS, lock_timeout_s=LOCK_TIMEOUT_SECONDS,
                 lock_max_ms=max(lane["lock_max_ms"] for lane in killed),
                 temp_files_max=max(lane["temp_files_max"] for lane in killed),
                 problems=[p for lane in killed for p in lane["problems"]][:KEPT_FAILURES])
    return {"quick": quick, "commit": commit(), "compress": compress, "kills": store,
            "seconds": time.monotonic() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred calls and kills (a smoke run)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import logging

    logging.disable(logging.WARNING)  # degraded compactions log one warning each, by design
    try:
        figures = run(args.quick)
    finally:
        shutil.rmtree(_HERMES_HOME, ignore_errors=True)
    (args.out / "soak.json").write_text(json.dumps(figures, indent=1, sort_keys=True), encoding="utf-8")
    c, k = figures["compress"], figures["kills"]
    print(f"soak: {c['calls']} compress() calls, {c['exceptions']} exceptions, {c['invalid']} invalid; "
          f"{k['kills']} SIGKILLs, {k['partial']} partial, {k['lost']} lost, {k['lock_stuck']} stuck locks; "
          f"{figures['seconds']:.0f} s", flush=True)
    if (args.out / "results.json").is_file():
        from benchmarks.report import render

        render.write(json.loads((args.out / "results.json").read_text(encoding="utf-8")), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
