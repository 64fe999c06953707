"""Fixtures for the store tests: the published reference schema, a minimal valid record and an initialised project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton_engine.handoff import ids
from baton_engine.handoff.model import HandoffRecord
from batontest import schemas
from batontest.hermes_home import initialised_project


@pytest.fixture(scope="session")
def assert_conforms() -> Callable[[dict[str, Any]], None]:
    """Assert against the published v0.1 schema (draft-07) with format checks on, so ``format: uuid`` is enforced."""
    return schemas.assert_conforms


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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one commit and an initialised ``.baton/`` (what ``baton init`` makes); modules that
    need another project define their own."""
    return initialised_project(tmp_path / "proj")
