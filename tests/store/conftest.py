"""Fixtures for the store tests: the published reference schema and a minimal valid record."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from baton_engine.handoff import ids
from baton_engine.handoff.model import HandoffRecord

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SCHEMA = REPO.parent / "shared" / "reference" / "handoff-v0.1.reference.json"


@pytest.fixture(scope="session")
def reference_validator() -> jsonschema.Draft7Validator:
    """The published v0.1 schema (draft-07) with format checks on, so ``format: uuid`` is enforced."""
    schema = json.loads(REFERENCE_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


@pytest.fixture(scope="session")
def assert_conforms(reference_validator: jsonschema.Draft7Validator) -> Callable[[dict[str, Any]], None]:
    def check(data: dict[str, Any]) -> None:
        errors = sorted(reference_validator.iter_errors(data), key=lambda err: list(err.path))
        assert not errors, [f"{list(err.path)}: {err.message}" for err in errors]

    return check


def record_data(**overrides: Any) -> dict[str, Any]:
    """A minimal draft record as input data (what capture would produce)."""
    stamp = ids.now_timestamp()
    data: dict[str, Any] = {
        "id": ids.new_record_id(),
        "created_at": stamp,
        "updated_at": stamp,
        "project": {"id": "sha256:" + "0" * 64, "root_hint": "repo"},
        "work": {"title": "Ship the store", "objective": "Persist handoff records safely"},
        "summary": {"current_state": "store half written"},
    }
    data.update(overrides)
    return data


@pytest.fixture
def make_record() -> Callable[..., HandoffRecord]:
    def build(**overrides: Any) -> HandoffRecord:
        return HandoffRecord.model_validate(record_data(**overrides))

    return build
