"""Every ``baton`` command on a hostile ``.baton/``: clear errors (documented exit codes), no crash, no
traceback, and nothing opened outside the project (checked with a Python audit hook on ``open``).

Hostile means: corrupt, truncated, oversized, binary, wrong-typed and foreign record files, a record
symlinked to a file outside the project, the handoffs directory, the config and the detector cache
symlinked out of the root, a corrupt config, traversal references, and records naming paths outside.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.handoff import ids
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.store import MAX_RECORD_BYTES
from baton_engine.operations.handoffs import ready_handoff

# No Hermes home of the user's is read (`doctor` is among the commands) and no tokenizer reaches for the hub.
os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="baton-test-home-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

OUTSIDE_MARKER = "OUTSIDE-THE-PROJECT-7f3a"
DOCUMENTED_EXIT_CODES = {0, 2, 3, 4, 5}


class OpenAudit:
    """Paths opened by this thread while ``active`` (an audit hook cannot be removed, so it is gated)."""

    def __init__(self) -> None:
        self.active = False
        self.thread: int | None = None
        self.opened: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if self.active and event == "open" and threading.get_ident() == self.thread and args:
            path, flags = args[0], args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            if flags & getattr(os, "O_NOFOLLOW", 0):
                return  # refuses a symlink itself: nothing behind the link is read
            if isinstance(path, (str, bytes, os.PathLike)):
                self.opened.append(os.fsdecode(path))

    def watching(self) -> OpenAudit:
        self.opened, self.thread, self.active = [], threading.get_ident(), True
        return self

    def __enter__(self) -> OpenAudit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.active = False


AUDIT = OpenAudit()


def outside_files(outside: Path, opened: list[str]) -> list[str]:
    hits = []
    for name in opened:
        path = Path(name)
        candidates = {path.resolve()} if path.is_absolute() else {(Path.cwd() / path).resolve()}
        if path.is_absolute():
            candidates.add(Path(os.path.abspath(name)))
        if any(c == outside or outside in c.parents for c in candidates):
            hits.append(name)
    return hits


def make_record(project: Path, title: str) -> str:
    result = checkpoint_create(project, {
        "title": title, "objective": "Keep the store safe", "summary": {"current_state": "half done"},
    })
    return result["handoff"]["id"]


def plant_outside(outside: Path) -> dict[str, Path]:
    """Files outside the project that a careless reader would follow: a valid-looking record, a config."""
    outside.mkdir(exist_ok=True)
    stamp = ids.now_timestamp()
    record = {"$schema": "https://baton.dev/schemas/handoff-v0.1.json", "kind": "handoff", "id": ids.new_record_id(),
              "created_at": stamp, "updated_at": stamp, "work": {"title": OUTSIDE_MARKER, "objective": OUTSIDE_MARKER}}
    (outside / "record.json").write_text(json.dumps(record))
    (outside / "config.json").write_text(json.dumps({"marker": OUTSIDE_MARKER}))
    (outside / "detector.json").write_text(json.dumps({"marker": OUTSIDE_MARKER}))
    (outside / "handoffs").mkdir(exist_ok=True)
    (outside / "handoffs" / "20260101T000000Z--0badf00d.json").write_text(json.dumps(record))
    (outside / "secret.txt").write_text(OUTSIDE_MARKER)
    return {"record": outside / "record.json", "config": outside / "config.json"}


def hostile_record_files(project: Path, good_id: str) -> None:
    handoffs = project / ".baton" / "handoffs"
    good = next(handoffs.glob("*.json")).read_text()
    data = json.loads(good)
    (handoffs / "20260101T000000Z--trunc001.json").write_text(good[: len(good) // 2])
    (handoffs / "20260101T000000Z--empty001.json").write_text("")
    (handoffs / "20260101T000000Z--array001.json").write_text("[1, 2, 3]")
    (handoffs / "20260101T000000Z--null0001.json").write_text("null")
    (handoffs / "20260101T000000Z--binary01.json").write_bytes(b"\xff\xfe\x00\x01garbage")
    (handoffs / "20260101T000000Z--big00001.json").write_bytes(b"{" + b" " * (MAX_RECORD_BYTES + 1))
    wrong = {**data, "id": ids.new_record_id(), "decisions": "not a list", "work": [1, 2], "status": 7}
    (handoffs / "20260101T000000Z--types001.json").write_text(json.dumps(wrong))
    traversal = {**data, "id": ids.new_record_id(),
                 "artifacts": [{"path": "../../outside/secret.txt", "role": "read"},
                               {"path": "/etc/passwd", "role": "read"}]}
    (handoffs / "20260101T000000Z--travers1.json").write_text(json.dumps(traversal))
    (handoffs / "notes.txt").write_text("not a record")
    (handoffs / "20260101T000000Z--dir00001.json").mkdir()
    os.mkfifo(handoffs / "20260101T000000Z--fifo0001.json")
    (handoffs / ".20260101T000000Z--half.json.x.tmp").write_text("{")


Scenario = Callable[[Path, Path, str], None]


def scenario_hostile_records(project: Path, outside: Path, good_id: str) -> None:
    hostile_record_files(project, good_id)
    (project / ".baton" / "handoffs" / "20260101T000000Z--link0001.json").symlink_to(outside / "record.json")


def scenario_handoffs_dir_symlinked(project: Path, outside: Path, good_id: str) -> None:
    handoffs = project / ".baton" / "handoffs"
    for path in handoffs.iterdir():
        path.unlink()
    handoffs.rmdir()
    handoffs.symlink_to(outside / "handoffs", target_is_directory=True)


def scenario_config_symlinked(project: Path, outside: Path, good_id: str) -> None:
    config = project / ".baton" / "config.json"
    config.unlink()
    config.symlink_to(outside / "config.json")


def scenario_config_corrupt(project: Path, outside: Path, good_id: str) -> None:
    (project / ".baton" / "config.json").write_text('{"policy": {"allowed_roots": ["../outside", "/"]}, "detector": 5')


def scenario_config_wrong_types(project: Path, outside: Path, good_id: str) -> None:
    (project / ".baton" / "config.json").write_text(json.dumps({"policy": "everything", "detector": [1], "x": {}}))


def scenario_cache_symlinked(project: Path, outside: Path, good_id: str) -> None:
    cache = project / ".baton" / "cache"
    (cache / "detector.json").unlink(missing_ok=True)
    (cache / "detector.json").symlink_to(outside / "detector.json")


SCENARIOS: dict[str, Scenario] = {
    "hostile-records": scenario_hostile_records,
    "handoffs-dir-symlinked-out": scenario_handoffs_dir_symlinked,
    "config-symlinked-out": scenario_config_symlinked,
    "config-corrupt": scenario_config_corrupt,
    "config-wrong-types": scenario_config_wrong_types,
    "detector-cache-symlinked-out": scenario_cache_symlinked,
}


def commands(good: str, draft: str, outside: Path) -> tuple[list[list[str]], str]:
    """Every command of the CLI (and the reference forms that could escape the root), and the stdin item."""
    decision = json.dumps({"decision": "keep going", "rationale": "tests"})
    return [
        ["status"], ["handoff", "list"], ["handoff", "show", good], ["handoff", "show", good, "--format", "md"],
        ["handoff", "show", str(outside / "record.json")], ["handoff", "show", "../outside/record.json"],
        ["handoff", "show", "../../../../etc/passwd"], ["handoff", "validate", good],
        ["handoff", "validate", "../outside/record.json"], ["handoff", "ready", draft], ["resume"],
        ["resume", good], ["resume", str(outside / "record.json")], ["record", "decision", draft, "--input", "-"],
        ["checkpoint", "create", "--title", "t", "--objective", "o", "--state", "s"], ["fork", good, "--label", "b"],
        ["merge", good, draft], ["detect", "--event", '{"explicit": true}'], ["doctor"], ["gc", "--dry-run"],
        ["gc"], ["audit"], ["migrate", "--dry-run"], ["init"], ["report"],
    ], decision


@pytest.fixture
def hostile_project(project: Path) -> Iterator[tuple[Path, Path, str, str]]:
    outside = project.parent / "outside"
    plant_outside(outside)
    good = make_record(project, "good one")
    ready_handoff(project, good, accept_warnings="reliability test")
    draft = make_record(project, "draft one")
    yield project, outside, good, draft


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_command_on_a_hostile_store_fails_clearly_and_stays_inside(
    hostile_project: tuple[Path, Path, str, str], scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, outside, good, draft = hostile_project
    SCENARIOS[scenario](project, outside, good)
    outside_before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    monkeypatch.chdir(project)
    runner = CliRunner()
    argv_list, decision = commands(good[:8], draft[:8], outside)
    failures = []
    for argv in argv_list:
        with AUDIT.watching() as audit:
            result = runner.invoke(cli, [*argv, "--json"], input=decision, catch_exceptions=True)
        output = result.output
        label = " ".join(argv)
        if result.exit_code not in DOCUMENTED_EXIT_CODES or (
                result.exception is not None and not isinstance(result.exception, SystemExit)):
            failures.append(f"{label}: exit {result.exit_code}, {type(result.exception).__name__}")
            continue
        if "Traceback" in output:
            failures.append(f"{label}: traceback in output")
        if OUTSIDE_MARKER in output:
            failures.append(f"{label}: printed content from outside the project")
        escaped = outside_files(outside, audit.opened)
        if escaped:
            failures.append(f"{label}: opened {escaped}")
        if result.exit_code:
            answer = json.loads(output)
            failed_checks = [c for c in answer.get("checks") or [] if c.get("status") == "fail" and c.get("detail")]
            if answer.get("ok") is not False or not ((answer.get("error") or {}).get("message") or failed_checks):
                failures.append(f"{label}: exit {result.exit_code} without a JSON error message: {output[:300]}")
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == outside_before, "wrote outside"
    assert not failures, "\n".join(failures)


def test_problem_files_are_named_with_their_kind_in_status(hostile_project: tuple[Path, Path, str, str]) -> None:
    project, outside, good, _draft = hostile_project
    scenario_hostile_records(project, outside, good)
    result = CliRunner().invoke(cli, ["status", "--root", str(project), "--json"])
    assert result.exit_code == 0, result.output
    problems = {Path(p["path"]).name: p["kind"] for p in json.loads(result.output)["problems"]}
    assert problems["20260101T000000Z--trunc001.json"] == "corrupt"
    assert problems["20260101T000000Z--big00001.json"] == "oversized"
    assert problems["20260101T000000Z--types001.json"] == "invalid"
    assert problems["20260101T000000Z--link0001.json"] == "symlink"
    assert problems["20260101T000000Z--fifo0001.json"] == "not_a_file"
