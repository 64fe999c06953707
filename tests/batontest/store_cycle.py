"""The store's write paths under SIGKILL: one capture -> record -> ready cycle, and what a kill may not do.

Shared by the CI soak (``tests/store/test_store_soak.py``: a fresh interpreter per kill, 40 kills) and the
benchmark soak (``benchmarks/compaction/soak.py``: a forked child per kill, thousands of kills), so both run the same writes
and judge them by one definition of a partial record, a lost record and a stuck lock.

A writer reports through ``note(line)``: ``begin <phase>`` before each write and ``done <what> <ref> [...]`` after
it returned. Only ``done`` lines are promises: a record whose write returned before the kill must be there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.store import LOCK_FILE, HandoffStore, find_project_root
from baton_engine.operations.handoffs import ready_handoff, record_item

PHASES = ("capture", "record", "ready")


def cycle(root: Path, tag: str, number: int, note: Callable[[str], None]) -> str:
    """Capture a draft, record an open item into it, validate and promote it; returns the record id."""
    note("begin capture")
    created = checkpoint_create(root, {
        "title": f"{tag} {number}", "objective": "survive SIGKILL",
        "summary": {"current_state": f"{tag} state {number} " + "padding " * 300}})
    ref = created["handoff"]["id"]
    note(f"done draft {ref}")
    note("begin record")
    item = f"{tag}-{number}-finish"
    record_item(root, ref, "open_item", {"description": item, "suggested_action": "run tests",
                                                    "acceptance_check": "green"})
    note(f"done item {ref} {item}")
    note("begin ready")
    ready_handoff(root, ref, accept_warnings="soak")
    note(f"done ready {ref}")
    return ref


@dataclass
class Confirmed:
    """What writers promised (their ``done`` lines) and the phase each one was in when it stopped."""

    drafts: set[str] = field(default_factory=set)
    items: set[tuple[str, str]] = field(default_factory=set)
    ready: set[str] = field(default_factory=set)

    def add(self, lines: str) -> str | None:
        """Absorb one writer's output; returns the phase its last ``begin`` line named (None: it wrote nothing)."""
        phase = None
        for line in lines.splitlines():
            words = line.split()
            if words[:1] == ["begin"] and len(words) == 2:
                phase = words[1]
            elif words[:2] == ["done", "draft"]:
                self.drafts.add(words[2])
            elif words[:2] == ["done", "item"]:
                self.items.add((words[2], words[3]))
            elif words[:2] == ["done", "ready"]:
                self.ready.add(words[2])
        return phase


@dataclass(frozen=True)
class StoreCheck:
    """The store after a kill: files that are not whole records, promises not kept, interrupted temp files."""

    records: int
    partial: list[str]
    lost: list[str]
    temp_files: int


def check_store(root: Path, confirmed: Confirmed) -> StoreCheck:
    """Every record file parses and validates; every confirmed write is there (drafts, items, ready status)."""
    paths = find_project_root(root)
    assert paths is not None, f"{root} has no .baton store"
    listing = HandoffStore(paths).list()
    partial = [f"{p.path.name}: {p.kind}" for p in listing.problems]
    hidden = [p for p in paths.handoffs_dir.iterdir() if p.name.startswith(".")]
    partial += [f"{p.name}: hidden file that is not a temp file" for p in hidden if not p.name.endswith(".tmp")]
    by_id = {entry.record.id: entry.record for entry in listing.entries}
    lost = [f"draft {ref}" for ref in sorted(confirmed.drafts - set(by_id))]
    lost += [f"item {item} of {ref}" for ref, item in sorted(confirmed.items)
             if ref in by_id and item not in {o.description for o in by_id[ref].open_items}]
    lost += [f"ready {ref} is {by_id[ref].status if ref in by_id else 'missing'}" for ref in sorted(confirmed.ready)
             if ref not in by_id or by_id[ref].status != "ready"]
    return StoreCheck(len(by_id), partial, lost, len(hidden))


def lock_recovery_seconds(root: Path, timeout: float) -> float | None:
    """How long the store lock took to acquire after a kill; None when it stayed held for ``timeout`` s."""
    paths = find_project_root(root)
    assert paths is not None, f"{root} has no .baton store"
    started = time.monotonic()
    try:
        with FileLock(str(paths.data_dir / LOCK_FILE), timeout=timeout):
            return time.monotonic() - started
    except Timeout:
        return None
