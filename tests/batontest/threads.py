"""Run one function from many threads at once: the thread-safety tests' common shape."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_in_threads(work: Callable[[int], object], count: int, *, timeout: float | None = None) -> None:
    """``work(0)`` .. ``work(count - 1)``, each in its own thread, all started before any is joined."""
    threads = [threading.Thread(target=work, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
