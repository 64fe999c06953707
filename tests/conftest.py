"""Settings and fixtures every test shares.

Hypothesis: no per-example deadline (a property holds or not whatever the machine's load; a loaded CI machine made
a 200 ms deadline fail a passing property: speed is measured by benchmarks, never by a test's clock), and under CI
the examples are derived from each test's name, so the gate's verdict does not depend on the run's random seed.
Locally each run explores new examples.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from batontest.engine_kit import LogSink

settings.register_profile("baton", deadline=None)
settings.register_profile("baton-ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("baton-ci" if os.environ.get("CI") else "baton")


@pytest.fixture(scope="session")
def qwen_count() -> Callable[[str], int]:
    """Exact Qwen3 token count of plain text (the hf backend over the local tokenizer, as the engine would count)."""
    from batontest import assets

    backend = assets.hf_backend(assets.qwen3_dir())
    return lambda text: backend.count_text(text).tokens


@pytest.fixture
def debug_logs() -> Iterator[LogSink]:
    """Every log line of this test, at DEBUG, from every logger (where planted secrets must never appear)."""
    from batontest.engine_kit import capture_all_logs

    with capture_all_logs() as sink:
        yield sink
