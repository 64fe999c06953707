"""Legacy ``.threadline/`` projects: read in place, moved only on request, only ``$schema`` rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_engine.errors import ConflictError, NotFoundError
from baton_engine.handoff.model import LEGACY_SCHEMA_ID, SCHEMA_ID
from baton_engine.handoff.store import HandoffStore, find_project_root, init_project, migrate_legacy, record_file_name


@pytest.fixture
def legacy_root(tmp_path: Path, make_record) -> Path:
    handoffs = tmp_path / ".threadline" / "handoffs"
    handoffs.mkdir(parents=True)
    (tmp_path / ".threadline" / "config.json").write_text('{"brief": {"max_tokens": 900}}')
    for number in range(3):
        record = make_record(summary={"current_state": f"legacy state {number}"})
        data = {**record.to_json_dict(), "$schema": LEGACY_SCHEMA_ID, "x_ts_only": {"n": number}}
        (handoffs / record_file_name(record)).write_text(json.dumps(data, indent=4))
    modern = make_record()
    (handoffs / record_file_name(modern)).write_text(json.dumps(modern.to_json_dict(), indent=2))
    (handoffs / "20200101T000000Z--broken00.json").write_text("{")
    return tmp_path


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_legacy_store_is_read_in_place(legacy_root: Path) -> None:
    paths = find_project_root(legacy_root)
    assert paths is not None and paths.legacy
    listing = HandoffStore(paths).list()
    assert len(listing.entries) == 4 and [p.kind for p in listing.problems] == ["corrupt"]


def test_init_without_the_flag_refuses_and_changes_nothing(legacy_root: Path) -> None:
    before = snapshot(legacy_root)
    with pytest.raises(ConflictError, match="--migrate-legacy"):
        init_project(legacy_root)
    assert snapshot(legacy_root) == before


def test_dry_run_reports_without_changing_anything(legacy_root: Path) -> None:
    before = snapshot(legacy_root)
    report = migrate_legacy(legacy_root, dry_run=True)
    assert report["dry_run"] is True
    assert (report["legacy_dir"], report["target_dir"], report["records"]) == (".threadline", ".baton", 5)
    assert len(report["rewritten"]) == 3
    assert [s["file"] for s in report["skipped"]] == ["20200101T000000Z--broken00.json"]
    assert snapshot(legacy_root) == before


def test_migration_moves_and_rewrites_only_schema(legacy_root: Path) -> None:
    before = {name: json.loads(raw) for name, raw in snapshot(legacy_root / ".threadline").items()
              if name.endswith(".json") and b"broken" not in raw and "broken" not in name}
    result = init_project(legacy_root, migrate_legacy=True)
    assert result["migrated"]["dry_run"] is False and len(result["migrated"]["rewritten"]) == 3
    assert not (legacy_root / ".threadline").exists()
    after = {name: json.loads(raw) for name, raw in snapshot(legacy_root / ".baton").items()
             if name in before}
    assert after.keys() == before.keys()
    for name, data in before.items():
        expected = {**data, "$schema": SCHEMA_ID} if "$schema" in data else data
        assert after[name] == expected
        assert list(after[name]) == list(data)  # key order kept
    assert (legacy_root / ".baton" / "handoffs" / "20200101T000000Z--broken00.json").read_text() == "{"
    assert (legacy_root / ".baton" / ".gitignore").exists()
    paths = find_project_root(legacy_root)
    assert paths is not None and not paths.legacy
    assert len(HandoffStore(paths).list().entries) == 4


def test_migration_needs_a_legacy_dir_and_no_existing_target(legacy_root: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NotFoundError, match="nothing to migrate"):
        migrate_legacy(empty, dry_run=False)
    (legacy_root / ".baton").mkdir()
    with pytest.raises(ConflictError, match="already exists"):
        migrate_legacy(legacy_root, dry_run=False)
    assert (legacy_root / ".threadline" / "handoffs").is_dir()
