"""Longer store soaks than ``tests/store/test_concurrency.py`` (which kills a bare ``store.save`` loop and
runs two record writers): here the writers go through the operations layer the CLI, the MCP server and
the engine tools share: checkpoint -> record an item -> validate and mark ready, and two processes
recording items into the SAME draft."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.store import HandoffStore, find_project_root
from baton_engine.operations.handoffs import status
from batontest.store_cycle import Confirmed, check_store, cycle, lock_recovery_seconds

WORKER = Path(__file__).with_name("store_worker.py")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_two_processes_recording_into_one_draft_lose_no_item(project: Path) -> None:
    draft = checkpoint_create(project, {"title": "shared", "objective": "o",
                                                   "summary": {"current_state": "s"}})["handoff"]["id"]
    per_worker = 40
    workers = [start(str(project), "items", draft, tag, str(per_worker)) for tag in ("a", "b")]
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err[-2000:]
        assert len(out.split("\n")) >= per_worker + 1
    record = HandoffStore(find_project_root(project)).load(draft)
    texts = {d.decision for d in record.decisions}
    expected = {f"{tag} decision {n}" for tag in ("a", "b") for n in range(per_worker)}
    assert expected - texts == set(), f"{len(expected - texts)} recorded decisions were lost"
    assert len({d.id for d in record.decisions}) == len(record.decisions), "two items share an id"


def test_sigkill_during_checkpoint_record_ready_never_leaves_a_partial_record(project: Path) -> None:
    rng = random.Random(20261130)
    confirmed = Confirmed()
    for iteration in range(40):
        worker = start(str(project), "cycle", f"k{iteration}")
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.6))
        worker.send_signal(signal.SIGKILL)
        out, _err = worker.communicate(timeout=30)
        confirmed.add(out)
        check = check_store(project, confirmed)
        assert check.partial == [], check.partial
        assert check.lost == [], check.lost
        assert lock_recovery_seconds(project, timeout=5.0) is not None, "the killed writer's lock stayed held"
    assert confirmed.ready, "no cycle completed before a kill; the soak exercised nothing"
    assert status(project)["ok"]


def test_the_store_check_sees_a_partial_and_a_lost_record(project: Path) -> None:
    """The soaks' verdicts are only as good as this check: a truncated file and a missing confirmed write."""
    confirmed = Confirmed()
    lines: list[str] = []
    for number in range(2):
        cycle(project, "control", number, lines.append)
    confirmed.add("\n".join(lines))
    assert check_store(project, confirmed).partial == [] and check_store(project, confirmed).lost == []
    first, second = sorted((project / ".baton" / "handoffs").glob("*.json"))[:2]
    first.write_bytes(first.read_bytes()[:100])  # what a non-atomic write would leave
    second.unlink()
    check = check_store(project, confirmed)
    assert len(check.partial) == 1 and check.partial[0].startswith(first.name)
    assert check.lost, "a confirmed record that is gone must count as lost"
