"""The soak's part of REPORT.md: its two Targets rows and the "Soak" section, from ``soak.json``
(``benchmarks/compaction/soak.py``). Absent figures are said so, never a failure: the soak runs after the benchmark."""

from __future__ import annotations

from typing import Any

from benchmarks.harness.markdown_table import markdown_table

NOT_RUN = "not run (no soak.json: `python benchmarks/compaction/soak.py` after the benchmark, or `scripts/bench.sh`)"


def targets(soak: dict[str, Any] | None) -> list[tuple[str, bool | None, str]]:
    fuzz_target = "soak: >= 10,000 fuzzed compress() calls, 0 exceptions, 0 invalid outputs"
    kill_target = "soak: >= 1,000 SIGKILLs in capture/record/ready, 0 partial or lost records, locks recoverable"
    if soak is None:
        return [(fuzz_target, None, NOT_RUN), (kill_target, None, NOT_RUN)]
    c, k = soak["compress"], soak["kills"]
    return [
        (fuzz_target, c["calls"] >= c["target_calls"] and c["exceptions"] == 0 and c["invalid"] == 0,
         f"{c['calls']:,} calls, {c['exceptions']} exceptions, {c['invalid']} invalid"),
        (kill_target, k["kills"] >= k["target_kills"] and k["partial"] == 0 and k["lost"] == 0
         and k["lock_stuck"] == 0 and k["child_errors"] == 0,
         f"{k['kills']:,} kills, {k['partial']} partial, {k['lost']} lost, {k['lock_stuck']} stuck locks"),
    ]


def render(soak: dict[str, Any] | None) -> list[str]:
    out = ["## Soak", ""]
    if soak is None:
        return [*out, f"Soak figures: {NOT_RUN}.", ""]
    c, k = soak["compress"], soak["kills"]
    quick = " (quick mode)" if soak["quick"] else ""
    out += [f"`benchmarks/compaction/soak.py`{quick} at commit {soak['commit']}, {soak['seconds']:.0f} s on two lanes; the CI "
            "suite's smaller versions share its strategies and checks (`tests/compaction/conversations.py`, "
            "`tests/batontest/store_cycle.py`).", "",
            f"**compress() fuzz**: {c['calls']:,} calls of the real `BatonContextEngine` (half on the Qwen3 hf "
            "backend, half on tiktoken o200k), a fresh engine per call in an initialised git project, window drawn "
            "from 4K/16K/64K. Transcripts from hypothesis with fixed seeds: clean, corrupted (orphan results, "
            "calls without results, garbage items, earlier Baton blocks) and hostile (duplicate call ids and "
            "results, None / empty / multi-part / giant contents up to 300,000 characters, astral, RTL, combining "
            "and zero-width text). Valid = the CI fuzz test's check (pair-safe OpenAI shape, latest real user "
            "request kept, serialisable, input not mutated) + the strict-server check of the loopback model server "
            "+ a Baton block, notice or degradation note when there was a conversation + no internal error.", ""]
    out += markdown_table(["calls", "exceptions", "invalid", "handoffs stored", "degraded (reason: calls)",
                           "call p50 / p99 / max ms", "largest input chars", "wall s"],
                          [[f"{c['calls']:,}", c["exceptions"], c["invalid"], f"{c['handoffs']:,}",
                            ", ".join(f"{r}: {n}" for r, n in sorted(c["degraded"].items())),
                            f"{c['call_ms']['p50']:.0f} / {c['call_ms']['p99']:.0f} / {c['call_ms']['max']:.0f}",
                            f"{c['max_input_chars']:,}", f"{c['seconds']:.0f}"]])
    out += ["", "Degraded calls are valid outputs that say why no handoff was stored: `validation_failed` (the "
            "capture from a garbage transcript did not validate, so the window was cut with a degradation note), "
            "`tokenizer_down` (the backend refuses to count image / audio parts or malformed contents, so that "
            "compaction ran on rough counts)."]
    if c["failures"]:
        out += ["", "First failures: " + "; ".join(f"call {f['call']}: {f['problem']}" for f in c["failures"])]
    out += ["", f"**SIGKILL on the store's write paths**: {k['kills']:,} writer processes (forked, each running "
            "capture -> record an item -> validate and mark ready in a loop) killed with SIGKILL, "
            f"{k['timed']} at a random time within two cycles and {k['injected']} at a random one of the store's "
            "fsync / rename / unlink calls (just before it). After every kill: every file in the store parses and "
            "validates (partial = any that does not), every write whose call returned before the kill is there "
            "(lost = a confirmed draft, item or ready status missing), and the store lock is acquired again "
            f"within {k['lock_timeout_s']:.0f} s.", ""]
    phases = ", ".join(f"{phase}: {n}" for phase, n in sorted(k["by_phase"].items()))
    out += markdown_table(["kills", "in phase", "partial", "lost", "stuck locks", "lock wait max ms", "writer errors",
                           "confirmed writes", "records checked", "temp files left (max)", "wall s"],
                          [[f"{k['kills']:,}", phases, k["partial"], k["lost"], k["lock_stuck"],
                            f"{k['lock_max_ms']:.0f}", k["child_errors"], f"{k['confirmed_writes']:,}",
                            f"{k['records_checked']:,}",
                            k["temp_files_max"], f"{k['seconds']:.0f}"]])
    if k["problems"]:
        out += ["", "First problems: " + "; ".join(k["problems"])]
    out += ["", "Temp files are interrupted writes' hidden `.<name>.tmp` files: never read as records, and left "
            "in place (nothing removes them yet).", ""]
    return out
