"""The published handoff v0.1 reference schema as a validator for tests.

The project keeps its own copy (``tests/reference/handoff-v0.1.reference.json``): the published reference
schema of the handoff spec, byte for byte (sha256 ``REFERENCE_SHA256``), so a bare clone runs every test.
It is NOT ``schemas/handoff-v0.1.json`` (generated from Baton's own models): validating Baton's records against
its own schema could not catch a model that drifted from the spec.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SCHEMA = REPO / "tests" / "reference" / "handoff-v0.1.reference.json"
REFERENCE_SHA256 = "d8736b8ef3e57b9ad0c60ebf73928086d0983baca86d620f51d8cf3fae2a6f9e"


@functools.cache
def reference_validator() -> jsonschema.Draft7Validator:
    """The schema (draft-07, itself checked) with format checks on, so ``format: uuid`` is enforced."""
    raw = REFERENCE_SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == REFERENCE_SHA256, f"{REFERENCE_SCHEMA} is not the published reference"
    schema = json.loads(raw.decode("utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def conformance_errors(data: Any) -> list[str]:
    """Every way ``data`` breaks the reference schema, as ``[path]: message``, ordered by path."""
    errors = sorted(reference_validator().iter_errors(data), key=lambda err: [str(part) for part in err.path])
    return [f"{list(err.path)}: {err.message}" for err in errors]


def assert_conforms(data: Any) -> None:
    errors = conformance_errors(data)
    assert not errors, errors
