"""End-to-end fixtures and checks; the REAL Hermes ``AIAgent`` runs through ``batontest.hermes_run``
(``driver.py`` in a subprocess, Baton loaded through its pip entry point)."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest

from batontest import schemas

# Words only the transcript has: every line of a scripted tool payload starts like "r3i1 L004:".
TRANSCRIPT_LINE = re.compile(r"r\d+i\d+ L\d{3}:")
TRANSCRIPT_KEYS = {"messages", "transcript", "conversation", "tool_calls", "tool_call_id"}


@pytest.fixture(scope="session")
def reference_validator() -> jsonschema.Draft7Validator:
    return schemas.reference_validator()


def transcript_keys(value: Any) -> set[str]:
    """Keys anywhere in a record that would mean a transcript was persisted."""
    if isinstance(value, dict):
        found = {k for k in value if k in TRANSCRIPT_KEYS}
        for child in value.values():
            found |= transcript_keys(child)
        return found
    if isinstance(value, list):
        return set().union(*(transcript_keys(child) for child in value)) if value else set()
    return set()
