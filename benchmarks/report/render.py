"""Turn ``results.json`` (and ``soak.json`` when the soak ran) into ``REPORT.md`` and PNG plots (also runnable
alone: ``python benchmarks/report/render.py DIR``).

Why separate from the run: the report can be regenerated and reviewed without re-running ten minutes of
benchmarks, and every target verdict is computed here from the raw numbers, never typed in by hand. The page is
its header, the Targets table gathered from the sections, the sections (``sections.SECTIONS``) and the findings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # run alone: the benchmarks package; the sections import batontest

from benchmarks.harness.markdown_table import markdown_table  # noqa: E402
from benchmarks.harness.targets import verdict  # noqa: E402
from benchmarks.report.sections import SECTIONS  # noqa: E402


def header(results: dict[str, Any]) -> list[str]:
    """The title, the machine and versions of this run, and how the workloads and engines are driven."""
    m = results["machine"]
    quick = ", quick mode" if results["quick"] else ""
    return ["# Baton head-to-head benchmark", "",
            f"Machine: {m['cpu']}, {m['cores']} cores (shared with other work), Python {m['python']}, {m['platform']}.",
            "Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
            + f"; Baton at commit {m.get('commit', 'unknown')}.",
            f"**All figures are from ONE run** ({results['seconds']:.0f} s{quick}); "
            "timings on a shared 2-core machine are noisy, compare within the run.", "",
            "Workloads are generated deterministically by `benchmarks/harness/workload.py` (tool-heavy turns: user "
            "-> assistant with 1-3 parallel tool calls -> results of varied size -> assistant, with planted "
            "identifier / path / error / decision needles; errors and decisions are recorded through `baton_capture`). Sizes are exact "
            "Qwen3 counts of system prompt + messages + tool schemas (hf backend with the real chat template); "
            "o200k (tiktoken) "
            "counts are shown alongside. Engines are driven directly, the way Hermes' loop drives them "
            "(update_from_response, should_compress with the real prompt count, compress on the transcript without "
            "the system prompt, then `last_prompt_tokens = -1`): Hermes' `AIAgent` refuses context_length < 64000 in "
            "its init, so the 16K runs could not go through it. Hermes' summary call is answered by the loopback stub "
            "`tests/batontest/model_server.py` with a fixed text; its LLM calls are counted and their time is "
            "excluded from its local time.", ""]


def render(results: dict[str, Any]) -> str:
    present = [(section, section.part(results)) for section in SECTIONS if section.present(results)]
    targets = [target for section, part in present for target in section.targets(part)]
    out = header(results)
    out += ["## Targets", ""]
    out += markdown_table(["target", "verdict", "measured"], [[t, verdict(ok), figure] for t, ok, figure in targets])
    out += ["", "See *Findings* below for why a target is not met.", ""]
    for section, part in present:
        out += section.render(part)
    out += ["## Findings", ""] + results.get("findings", ["(none recorded)"]) + [""]
    return "\n".join(out)


FINDINGS_FILE = REPO / "benchmarks" / "FINDINGS.md"


def write(results: dict[str, Any], out: Path) -> Path:
    """Plots + REPORT.md; the findings (analysis of misses, written after reading a run) come from FINDINGS.md."""
    if FINDINGS_FILE.is_file():
        results = {**results, "findings": FINDINGS_FILE.read_text(encoding="utf-8").strip().splitlines()}
    if (out / "soak.json").is_file():  # benchmarks/compaction/soak.py, run after the benchmark
        results = {**results, "soak": json.loads((out / "soak.json").read_text(encoding="utf-8"))}
    if (out / "reclaim.json").is_file():  # benchmarks/compaction/reclaim_bench.py, run on Hermes 0.22's interface
        results = {**results, "reclaim": json.loads((out / "reclaim.json").read_text(encoding="utf-8"))}
    for section in SECTIONS:
        if section.present(results):
            section.plots(section.part(results), out)
    path = out / "REPORT.md"
    path.write_text(render(results), encoding="utf-8")
    print(f"report: {path}")
    return path


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "benchmarks" / "results"
    write(json.loads((folder / "results.json").read_text(encoding="utf-8")), folder)
