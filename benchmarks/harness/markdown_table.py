"""The Markdown table every section of REPORT.md draws. Its own module so that a section's module
(``host/memory_bench.py``, ``report/soak_section.py``) need not import ``report/render.py``, which imports the
sections (no circle)."""

from __future__ import annotations

from typing import Any


def markdown_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """The lines of a table with ``headers`` over ``rows`` (each cell as ``str`` gives it)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines
