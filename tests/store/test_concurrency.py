"""Real processes against one store: parallel writers lose nothing; SIGKILL never leaves a partial record."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from baton_engine.handoff.store import HandoffStore, find_project_root, init_project

WRITER = Path(__file__).with_name("store_writer.py")


def start_writer(root: Path, limit: int, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(root), str(limit), tag],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_processes_writing_many_records_lose_none(tmp_path: Path) -> None:
    init_project(tmp_path)
    per_writer = 120
    writers = [start_writer(tmp_path, per_writer, tag) for tag in ("a", "b")]
    written: set[str] = set()
    for writer in writers:
        out, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err[-2000:]
        lines = out.split()
        assert lines[0] == "ready" and len(lines) == per_writer + 1
        written.update(lines[1:])
    listing = HandoffStore(find_project_root(tmp_path)).list()
    assert listing.problems == []
    listed = {entry.record.id for entry in listing.entries}
    assert written <= listed
    assert len(listed) == 2 * per_writer + 2  # plus each writer's rewritten draft
    drafts = [e.record for e in listing.entries if e.record.summary.current_state.endswith(f"v{per_writer - 1}")]
    assert len(drafts) == 2  # the last rewrite of each draft won
    for path in (tmp_path / ".baton" / "handoffs").iterdir():
        assert path.suffix == ".json", f"leftover temp file {path.name}"
        json.loads(path.read_text(encoding="utf-8"))


def test_sigkill_at_random_points_never_exposes_a_partial_record(tmp_path: Path) -> None:
    init_project(tmp_path)
    store = HandoffStore(find_project_root(tmp_path))
    rng = random.Random(20260131)
    confirmed: set[str] = set()
    for iteration in range(25):
        writer = start_writer(tmp_path, 0, f"k{iteration}")
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, 0.25))
        writer.send_signal(signal.SIGKILL)
        out, _err = writer.communicate(timeout=30)
        confirmed.update(out.split())  # ids whose save() returned before the kill
        listing = store.list()
        assert listing.problems == [], [(p.path.name, p.kind) for p in listing.problems]
        listed = {entry.record.id for entry in listing.entries}
        assert confirmed <= listed, "a record whose save() returned was lost"
    # Interrupted writes may leave hidden temp files; they are never mistaken for records.
    hidden = [p for p in (tmp_path / ".baton" / "handoffs").iterdir() if p.name.startswith(".")]
    assert all(p.name.endswith(".tmp") for p in hidden)
    assert confirmed, "the writer never completed a save; the test exercised nothing"
