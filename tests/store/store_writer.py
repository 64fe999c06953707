"""A separate writer process for the concurrency and crash tests (run as a script, not collected).

    python store_writer.py <project root> <count (0 = until killed)> <tag>

Alternates between saving a new record and rewriting one draft, printing each new record id.
Prints ``ready`` after its first save so the parent knows writes are under way.
"""

from __future__ import annotations

import sys
from itertools import count
from pathlib import Path

from baton_engine.handoff import ids
from baton_engine.handoff.model import HandoffRecord
from baton_engine.handoff.store import HandoffStore, find_project_root


def record(tag: str, number: int) -> HandoffRecord:
    stamp = ids.now_timestamp()
    return HandoffRecord.model_validate({
        "id": ids.new_record_id(), "created_at": stamp, "updated_at": stamp,
        "project": {"id": "sha256:" + "1" * 64, "root_hint": "proj"},
        "work": {"title": f"writer {tag}", "objective": "stress the store"},
        "summary": {"current_state": f"{tag} record {number} " + "padding " * 200},
    })


def main(root: str, limit: int, tag: str) -> None:
    paths = find_project_root(Path(root))
    assert paths is not None
    store = HandoffStore(paths)
    draft = record(tag, -1)
    store.save(draft)
    print("ready", flush=True)
    numbers = range(limit) if limit else count()
    for number in numbers:
        fresh = record(tag, number)
        store.save(fresh)
        print(fresh.id, flush=True)
        draft = HandoffRecord.model_validate({**draft.to_json_dict(), "summary": {"current_state": f"{tag} v{number}"}})
        store.save(draft)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
