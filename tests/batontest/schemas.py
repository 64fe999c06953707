"""The published handoff v0.1 reference schema (outside this repository) as a validator for tests."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SCHEMA = REPO.parent / "shared" / "reference" / "handoff-v0.1.reference.json"


@functools.cache
def reference_validator() -> jsonschema.Draft7Validator:
    """The schema (draft-07, itself checked) with format checks on, so ``format: uuid`` is enforced."""
    schema = json.loads(REFERENCE_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def conformance_errors(data: Any) -> list[str]:
    """Every way ``data`` breaks the reference schema, as ``[path]: message``, ordered by path."""
    errors = sorted(reference_validator().iter_errors(data), key=lambda err: [str(part) for part in err.path])
    return [f"{list(err.path)}: {err.message}" for err in errors]


def assert_conforms(data: Any) -> None:
    errors = conformance_errors(data)
    assert not errors, errors
