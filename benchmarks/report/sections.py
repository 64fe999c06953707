"""The sections of REPORT.md, in page order: what each reads of the results, its text, its plots and its rows of
the Targets table.

Why a list here and the words with each benchmark: a figure and the sentence that explains it change together, in
the benchmark's module (its ``render`` and ``targets``); this list only says which part of the results a section
reads and where it stands on the page, so ``render`` is a loop over it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.budget import budgets_bench, cap_bench, shapes_bench
from benchmarks.compaction import compress_bench, long_session_bench
from benchmarks.harness.targets import Target
from benchmarks.host import memory_bench, overhead_bench
from benchmarks.recall import recall_bench, store_bench
from benchmarks.report import reclaim_section, soak_section
from benchmarks.tokens import anchor_bench, estimator_bench, loop_bench, tokens_bench


def _no_targets(part: Any) -> list[Target]:
    return []


def _no_plots(part: Any, out: Path) -> list[str]:
    return []


@dataclass(frozen=True)
class Section:
    """One benchmark's part of REPORT.md. Its functions get ``results[key]``; the section is left out when the run
    has no ``key``, unless ``always`` (a separate run's figures: the section says they were not run, given None).
    ``key`` None: the section reads several parts, gets all the results and is always there."""

    key: str | None
    render: Callable[[Any], list[str]]
    targets: Callable[[Any], list[Target]] = _no_targets
    plots: Callable[[Any, Path], list[str]] = _no_plots
    always: bool = False

    def present(self, results: dict[str, Any]) -> bool:
        return self.key is None or self.always or self.key in results

    def part(self, results: dict[str, Any]) -> Any:
        return results if self.key is None else results.get(self.key)


def _render_long(results: dict[str, Any]) -> list[str]:
    return long_session_bench.render(results["long"])


def _plot_long(results: dict[str, Any], out: Path) -> list[str]:
    return long_session_bench.plot(results["long"], out)


def _plot_cap(cap: Any, out: Path) -> list[str]:
    return [cap_bench.plot(cap, out).name]


def _store_targets(store: dict[str, Any]) -> list[Target]:
    return [store_bench.target(store)]


def _shapes_targets(shapes: dict[str, Any]) -> list[Target]:
    return [shapes_bench.target(shapes)]


def _memory_targets(results: dict[str, Any]) -> list[Target]:
    return [memory_bench.target(results)]


SECTIONS = (
    Section("sizes", compress_bench.render, compress_bench.targets, compress_bench.plot),
    Section(None, _render_long, long_session_bench.targets, _plot_long),
    Section("budgets", budgets_bench.render, budgets_bench.targets),
    Section("loop", loop_bench.render),
    Section("anchor", anchor_bench.render),
    Section("recall", recall_bench.render, recall_bench.verdicts),
    Section("store", store_bench.render, _store_targets),
    Section("tokens", tokens_bench.render, tokens_bench.targets),
    Section("cap", cap_bench.render, plots=_plot_cap),
    Section("shapes", shapes_bench.render, _shapes_targets),
    Section("estimators", estimator_bench.render),
    Section("overhead", overhead_bench.render, overhead_bench.targets, overhead_bench.plot),
    Section(None, memory_bench.render, _memory_targets),
    Section("soak", soak_section.render, soak_section.targets, always=True),
    Section("reclaim", reclaim_section.render, reclaim_section.targets, always=True),
)
