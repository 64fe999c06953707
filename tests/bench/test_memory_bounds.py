"""The report's Memory table reads each cache's bound from the code: every constant it names must exist."""

from __future__ import annotations

from benchmarks.host import memory_bench


def test_every_listed_cache_has_its_bound_constant() -> None:
    rows = memory_bench.cache_bounds()
    assert [row["cache"] for row in rows if row["missing"]] == []
    assert all(isinstance(value, int) and value > 0 for row in rows for value in row["bound"].values())


def test_rss_is_read() -> None:
    assert memory_bench.rss_bytes() > 1024 * 1024 <= memory_bench.peak_rss_bytes()
