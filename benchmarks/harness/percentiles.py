"""The one percentile the benchmarks report (nearest rank), so p95 means the same in every table."""

from __future__ import annotations

import math


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank ``share`` percentile of ``values`` (0 < share <= 1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]
