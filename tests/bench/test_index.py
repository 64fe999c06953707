"""benchmarks/INDEX.md is what ``benchmarks/index.py`` writes (issue 45): every benchmark of the subject folders
listed with its figure, target, FINDINGS section and quick test, and every test it names exists."""

from __future__ import annotations

from pathlib import Path

from benchmarks import index

REPO = Path(__file__).resolve().parents[2]


def test_the_index_is_current() -> None:
    assert index.INDEX.read_text("utf-8") == index.render(), "benchmarks/INDEX.md is stale: python benchmarks/index.py"


def test_every_benchmark_is_listed_with_a_test_that_exists() -> None:
    rows = [row for subject in index.SUBJECTS for row in index.benchmarks(subject)]
    assert len(rows) >= 29 and all(row["figure"] and row["target"] for row in rows)
    named = {row["test"] for row in rows if row["test"]}
    assert named and all((REPO / test).is_file() for test in named), named
