"""REPORT.md is a loop over sections (issue 45): the Targets table gathers each present section's rows in page order,
a section whose results are absent is left out unless it stands for a separate run (then it says so), and the
page keeps the committed report's sections and targets in their order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batontest.quick_bench import outline

from benchmarks.report import render
from benchmarks.report.sections import SECTIONS, Section

REPO = Path(__file__).resolve().parents[2]
MACHINE = {"cpu": "cpu", "cores": 2, "python": "3.11", "platform": "linux", "versions": {}, "commit": "abc"}


def _lines(name: str) -> Any:
    return lambda part: [f"## {name}", "", f"{name}: {part}", ""]


def test_render_gathers_the_present_sections_targets_in_page_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "SECTIONS", (
        Section("first", _lines("first"), lambda part: [("first target", part == 1, "one")]),
        Section("missing", _lines("missing"), lambda part: [("never shown", True, "-")]),
        Section(None, lambda results: ["## whole", "", f"keys {sorted(results)}", ""]),
        Section("separate", _lines("separate"), lambda part: [("separate target", None, "not run")], always=True),
    ))
    page = render.render({"machine": MACHINE, "quick": True, "seconds": 1.0, "first": 1, "findings": ["why"]})
    assert page.index("| first target | **met** | one |") < page.index("| separate target | **not run** | not run |")
    assert "never shown" not in page and "## missing" not in page
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == ["## Targets", "## first", "## whole", "## separate", "## Findings"]
    assert "separate: None" in page and page.rstrip().endswith("why")


def test_the_sections_stand_in_the_committed_reports_order() -> None:
    """Each section owns one part of the committed page: its first heading, in the same order."""
    headings, targets = outline((REPO / "benchmarks" / "results" / "REPORT.md").read_text("utf-8"))
    assert headings[0] == "## Targets" and len(targets) >= 20
    owners = ["compress() by conversation size", "The growing N-turn session", "Output budgets", "Tokenizer round trips",
              "Usage-anchored counting", "Needle recall", "should_compress with a large store", "Token counting",
              "The cap near the limit", "Estimators", "Per-turn overhead", "Memory", "Soak", "Reclamation"]
    found = [next(i for i, h in enumerate(headings) if h[3:].startswith(owner)) for owner in owners]
    assert found == sorted(found)
    assert len(SECTIONS) == len(owners) + 1  # + the request shapes, newer than the committed run
