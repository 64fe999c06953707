"""A row of the report's Targets table, and how its verdict reads. Why apart from the report: each benchmark's
section states its own targets, and the report only gathers them."""

from __future__ import annotations

Target = tuple[str, bool | None, str]  # (what is required, met? (None: not run), the figure measured)


def verdict(ok: bool | None) -> str:
    return "**not run**" if ok is None else "**met**" if ok else "**NOT met**"
