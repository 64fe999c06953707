"""The handoff store on real directories: discovery, init, saves, loads, listing and hostile files."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_engine.errors import ConflictError, NotFoundError, PolicyBlocked, UserInputError
from baton_engine.handoff import ids
from baton_engine.handoff.config import BatonConfig, load_config
from baton_engine.handoff.model import HandoffRecord
from baton_engine.handoff.store import (
    MAX_RECORD_BYTES,
    RECORD_NAME_RE,
    HandoffStore,
    ProjectPaths,
    find_project_root,
    init_project,
    record_file_name,
)


@pytest.fixture
def project(tmp_path: Path) -> ProjectPaths:
    root = tmp_path / "proj"
    root.mkdir()
    init_project(root)
    paths = find_project_root(root)
    assert paths is not None
    return paths


@pytest.fixture
def store(project: ProjectPaths) -> HandoffStore:
    return HandoffStore(project)


def test_init_creates_the_layout_with_defaults(tmp_path: Path) -> None:
    result = init_project(tmp_path)
    assert result["created"] == [".baton", ".baton/handoffs", ".baton/cache", ".baton/config.json", ".baton/.gitignore"]
    assert result["root"] == str(tmp_path.resolve()) and result["migrated"] is None
    assert load_config(tmp_path / ".baton") == BatonConfig()
    assert (tmp_path / ".baton" / ".gitignore").read_text().splitlines()[:2] == ["index.sqlite", "cache/"]
    again = init_project(tmp_path)
    assert again["created"] == []


def test_init_keeps_an_existing_config(tmp_path: Path) -> None:
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton" / "config.json").write_text('{"brief": {"max_tokens": 800}}')
    init_project(tmp_path)
    assert load_config(tmp_path / ".baton").brief.max_tokens == 800


def test_init_never_touches_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = (repo / ".git" / "config").read_bytes()
    init_project(repo)
    assert sorted(p.name for p in home.iterdir()) == []
    assert (repo / ".git" / "config").read_bytes() == before
    ignored = subprocess.run(["git", "-C", str(repo), "check-ignore", ".baton/index.sqlite", ".baton/cache/x"],
                             capture_output=True, text=True)
    assert ignored.stdout.split() == [".baton/index.sqlite", ".baton/cache/x"]


def test_init_refuses_a_missing_directory_and_symlinked_store(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not a directory"):
        init_project(tmp_path / "missing")
    outside = tmp_path / "outside"
    outside.mkdir()
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / ".baton").symlink_to(outside)
    with pytest.raises(PolicyBlocked, match="symlink"):
        init_project(proj)
    assert list(outside.iterdir()) == []


def test_find_project_root_walks_up_and_prefers_baton(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_project_root(deep) is None
    (tmp_path / "a" / ".threadline").mkdir()
    legacy = find_project_root(deep)
    assert legacy == ProjectPaths(tmp_path / "a", tmp_path / "a" / ".threadline", legacy=True)
    (tmp_path / "a" / ".baton").mkdir()
    assert find_project_root(deep) == ProjectPaths(tmp_path / "a", tmp_path / "a" / ".baton", legacy=False)
    (tmp_path / "a" / "b" / ".threadline").mkdir()
    assert find_project_root(deep).root == tmp_path / "a" / "b"  # nearest wins


def test_save_load_round_trip_and_file_name(store: HandoffStore, make_record, assert_conforms) -> None:
    record = make_record(x_future={"kept": [1, 2]})
    path = store.save(record)
    assert path.parent == store.paths.handoffs_dir
    assert re.fullmatch(r"\d{8}T\d{6}Z--[0-9a-f]{8}\.json", path.name)
    assert path.name.endswith(f"--{record.short_id}.json")
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert_conforms(on_disk)
    assert on_disk["x_future"] == {"kept": [1, 2]}
    for ref in (record.id, record.id.upper(), record.short_id, record.id[:13], str(path),
                os.path.relpath(path)):
        assert store.load(ref) == record
    assert store.path_of(record.short_id) == path
    assert not [p for p in store.paths.handoffs_dir.iterdir() if p.name.startswith(".")]  # no temp left


def test_writes_are_deterministic(tmp_path: Path, make_record) -> None:
    record = make_record()
    outputs = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        init_project(tmp_path / name)
        outputs.append(HandoffStore(find_project_root(tmp_path / name)).save(record).read_bytes())
    assert outputs[0] == outputs[1]


def test_list_is_ordered_and_latest_filters_by_status(store: HandoffStore, make_record) -> None:
    older = make_record(created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z", status="ready")
    newer = make_record(created_at="2026-01-02T00:00:00Z", updated_at="2026-01-02T00:00:00Z", status="ready")
    draft = make_record(created_at="2026-01-03T00:00:00Z", updated_at="2026-01-03T00:00:00Z")
    for record in (draft, newer, older):
        store.save(record)
    listing = store.list()
    assert [e.record.id for e in listing.entries] == [older.id, newer.id, draft.id]
    assert listing.problems == []
    assert store.latest().id == newer.id
    assert store.latest("draft").id == draft.id
    assert store.latest(None).id == draft.id
    assert store.latest("archived") is None


def _listed_latest(store: HandoffStore, status: str | None, where=None) -> HandoffRecord | None:
    """What ``latest`` must answer: the newest of ``list()``'s records that match."""
    matching = [e.record for e in store.list().entries
                if (status is None or e.record.status == status) and (where is None or where(e.record))]
    return matching[-1] if matching else None


def test_latest_agrees_with_the_listing_on_copies_ties_and_filters(store: HandoffStore, make_record) -> None:
    """``latest`` reads the records one at a time; what it picks is still ``list()``'s newest match: the
    canonically named copy of an id wins, records of one second are ordered by id, ``where`` applies."""
    tied = [make_record(created_at="2026-01-02T00:00:00Z", updated_at="2026-01-02T00:00:00Z", status="ready",
                        work={"title": f"tied {n}", "objective": "o"}) for n in range(3)]
    newest = make_record(created_at="2026-01-03T00:00:00Z", updated_at="2026-01-03T00:00:00Z", status="ready")
    for record in (*tied, newest):
        store.save(record)
    handoffs = store.paths.handoffs_dir
    # a later copy of the newest record under another name, as a draft: the canonical (ready) file wins
    copy = json.loads((handoffs / record_file_name(newest)).read_text(encoding="utf-8"))
    (handoffs / "aaa-copy.json").write_text(json.dumps({**copy, "status": "draft"}), encoding="utf-8")
    # a record stored only under a name of its own still counts (list() keeps it)
    loose = make_record(created_at="2026-01-04T00:00:00Z", updated_at="2026-01-04T00:00:00Z")
    (handoffs / "zzz-loose.json").write_text(loose.model_dump_json(by_alias=True, exclude_none=True),
                                             encoding="utf-8")
    not_newest = lambda record: record.id != newest.id  # noqa: E731
    for status, where in (("ready", None), ("draft", None), (None, None), ("ready", not_newest), ("archived", None)):
        assert store.latest(status, where) == _listed_latest(store, status, where)
    assert store.latest().id == newest.id
    assert store.latest("draft").id == loose.id
    assert store.latest("ready", not_newest).id == max(tied, key=lambda r: r.id).id


def test_latest_holds_one_record_at_a_time(store: HandoffStore, make_record) -> None:
    """Every session start on a gateway asks for the latest handoff: holding every parsed record at once (and a
    4 MB read buffer per file) made its peak grow with the store. Measured: 0.11 MB for 79 records of the soak
    (before: 6.1 MB for 62, ~32 KB a record on top of the 4 MB buffer)."""
    import tracemalloc

    for n in range(150):
        store.save(make_record(status="ready", work={"title": f"t{n}", "objective": "x" * 2000}))
    store.latest()  # imports and validators warm
    tracemalloc.start()
    try:
        assert store.latest() is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"latest() peaked at {peak / 1e6:.1f} MB over 150 records"


def test_refs_not_found_and_ambiguous(store: HandoffStore, make_record) -> None:
    first, second = make_record(), make_record()
    store.save(first)
    store.save(second)
    common = os.path.commonprefix([first.id, second.id])
    if len(common) >= 4:
        with pytest.raises(ConflictError, match="matches 2 handoffs"):
            store.load(common)
    with pytest.raises(NotFoundError, match="run `baton handoff list`"):
        store.load("ffffffff")
    with pytest.raises(NotFoundError, match="references are ids"):
        store.load("not an id")
    with pytest.raises(UserInputError, match="a handoff reference is needed"):
        store.load("  ")
    with pytest.raises(NotFoundError, match="no handoff file"):
        store.load(str(store.paths.handoffs_dir / "missing.json"))


def test_draft_content_can_change_but_ready_content_cannot(store: HandoffStore, make_record) -> None:
    record = make_record()
    store.save(record)
    edited = HandoffRecord.model_validate({**record.to_json_dict(), "summary": {"current_state": "further along"}})
    store.save(edited)
    assert store.load(record.id).summary.current_state == "further along"
    ready = store.transition(record.id, "ready")
    assert store.load(record.id).status == "ready"
    tampered = HandoffRecord.model_validate({**ready.to_json_dict(), "summary": {"current_state": "rewritten"}})
    with pytest.raises(ConflictError, match="immutable"):
        store.save(tampered)
    backwards = HandoffRecord.model_validate({**ready.to_json_dict(), "status": "draft"})
    with pytest.raises(ConflictError, match="cannot become 'draft'"):
        store.save(backwards)
    assert store.load(record.id).summary.current_state == "further along"
    assert len(list(store.paths.handoffs_dir.glob("*.json"))) == 1


def test_transition_records_a_redacted_reason(store: HandoffStore, make_record) -> None:
    record = make_record(status="ready")
    store.save(record)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    moved = store.transition(record.short_id, "archived", reason=f"done; token {token}")
    assert moved.status_history[-1]["to"] == "archived"
    assert token not in store.path_of(record.id).read_text()
    with pytest.raises(ConflictError, match="allowed: none"):
        store.transition(record.id, "ready")


def test_save_refuses_secrets_oversize_and_wrong_types(store: HandoffStore, make_record) -> None:
    leaky = make_record(summary={"current_state": "key sk-proj-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"})
    with pytest.raises(PolicyBlocked, match=r"summary\.current_state"):
        store.save(leaky)
    huge = make_record(summary={"current_state": "word " * (MAX_RECORD_BYTES // 5 + 10)})
    with pytest.raises(UserInputError, match="at most"):
        store.save(huge)
    with pytest.raises(UserInputError, match="takes a HandoffRecord"):
        store.save(huge.to_json_dict())  # type: ignore[arg-type]
    assert list(store.paths.handoffs_dir.iterdir()) == []


def test_hostile_files_are_reported_never_raised(store: HandoffStore, make_record, tmp_path: Path) -> None:
    good = make_record()
    store.save(good)
    folder = store.paths.handoffs_dir
    (folder / "20260101T000000Z--trunc001.json").write_text(good.model_dump_json()[:40])
    (folder / "20260101T000000Z--array001.json").write_text("[1, 2, 3]")
    (folder / "20260101T000000Z--other001.json").write_text(json.dumps({"$schema": "https://x/y", "kind": "note"}))
    wrong_type = {**good.to_json_dict(), "id": ids.new_record_id(), "decisions": "not a list", "flags": [3]}
    (folder / "20260101T000000Z--types001.json").write_text(json.dumps(wrong_type))
    (folder / "20260101T000000Z--big00001.json").write_bytes(b" " * (MAX_RECORD_BYTES + 1))
    (folder / "20260101T000000Z--binary01.json").write_bytes(b"\xff\xfe\x00garbage")
    (folder / "notes.txt").write_text("hello")
    (folder / "20260101T000000Z--dupe0001.json").write_text(json.dumps(good.to_json_dict()))
    secret = tmp_path / "outside-secret.json"
    secret.write_text(json.dumps(make_record().to_json_dict()))
    (folder / "20260101T000000Z--link0001.json").symlink_to(secret)
    (folder / "20260101T000000Z--dir00001.json").mkdir()
    os.mkfifo(folder / "20260101T000000Z--fifo0001.json")
    (folder / ".20260101T000000Z--half.json.abc.tmp").write_text("{")  # an interrupted write

    listing = store.list()
    assert [e.record.id for e in listing.entries] == [good.id]
    kinds = {p.path.name: p.kind for p in listing.problems}
    assert kinds == {
        "20260101T000000Z--trunc001.json": "corrupt",
        "20260101T000000Z--array001.json": "foreign",
        "20260101T000000Z--other001.json": "foreign",
        "20260101T000000Z--types001.json": "invalid",
        "20260101T000000Z--big00001.json": "oversized",
        "20260101T000000Z--binary01.json": "corrupt",
        "notes.txt": "foreign",
        "20260101T000000Z--dupe0001.json": "duplicate",
        "20260101T000000Z--link0001.json": "symlink",
        "20260101T000000Z--dir00001.json": "not_a_file",
        "20260101T000000Z--fifo0001.json": "not_a_file",
    }
    invalid = next(p for p in listing.problems if p.kind == "invalid")
    assert "decisions" in invalid.reason and "not a list" not in invalid.reason
    assert store.load(good.short_id) == good


def test_paths_outside_the_root_are_refused(store: HandoffStore, make_record, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(make_record().to_json_dict()))
    for ref in (str(outside), str(store.paths.root / ".." / "elsewhere.json"), "../elsewhere.json"):
        with pytest.raises(PolicyBlocked, match="outside the project root"):
            store.load(ref if not ref.startswith("..") else str(store.paths.handoffs_dir / ".." / ".." / ".." / ref))
    link = store.paths.handoffs_dir / "20260101T000000Z--link0002.json"
    link.symlink_to(outside)
    with pytest.raises(UserInputError, match="symlink"):
        store.load(str(link))


def test_writes_refuse_a_symlinked_handoffs_dir(tmp_path: Path, make_record) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".baton").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".baton" / "handoffs").symlink_to(outside)
    handoffs = HandoffStore(find_project_root(root))
    with pytest.raises(PolicyBlocked, match="outside the project root"):
        handoffs.save(make_record())
    assert list(outside.iterdir()) == []
    assert handoffs.list().problems[0].kind == "symlink"


def test_writes_refuse_a_symlinked_target_file(store: HandoffStore, make_record, tmp_path: Path) -> None:
    record = make_record()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (store.paths.handoffs_dir / record_file_name(record)).symlink_to(victim)
    with pytest.raises(PolicyBlocked, match="symlink"):
        store.save(record)
    assert victim.read_text() == "keep me"


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_file_names_are_safe_for_any_created_at_and_id(text: str) -> None:
    stamp = ids.now_timestamp()
    data = {"id": ids.new_record_id(), "created_at": stamp, "updated_at": stamp,
            "project": {"id": "sha256:x", "root_hint": "r"}, "work": {"title": "t", "objective": "o"},
            "summary": {"current_state": "s"}}
    for key in ("id", "created_at"):
        try:
            record = HandoffRecord.model_validate({**data, key: text})
        except ValueError:
            continue  # the model refuses it before any path is built
        name = record_file_name(record)
        assert RECORD_NAME_RE.match(name) and "/" not in name and ".." not in name
