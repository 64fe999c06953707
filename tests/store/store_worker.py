"""A separate process driving the store through the same operations the CLI and the engine tools use.

    python store_worker.py <project root> items <draft ref> <tag> <count>   # record <count> decisions
    python store_worker.py <project root> cycle <tag>                      # checkpoint -> record -> ready, forever

Prints ``ready`` once under way, then one line per completed write (``item <tag> <n>``; for ``cycle`` the
``begin`` / ``done`` lines of ``batontest.store_cycle``).
"""

from __future__ import annotations

import sys
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: make ``batontest`` importable

from baton_engine.operations.handoffs import record_item  # noqa: E402
from batontest.store_cycle import cycle as store_cycle  # noqa: E402


def record_items(root: Path, ref: str, tag: str, total: int) -> None:
    print("ready", flush=True)
    for number in range(total):
        record_item(root, ref, "decision", {"decision": f"{tag} decision {number}", "rationale": "soak"})
        print(f"item {tag} {number}", flush=True)


def cycle(root: Path, tag: str) -> None:
    print("ready", flush=True)
    for number in count():
        store_cycle(root, tag, number, lambda line: print(line, flush=True))


if __name__ == "__main__":
    project = Path(sys.argv[1])
    if sys.argv[2] == "items":
        record_items(project, sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        cycle(project, sys.argv[3])
