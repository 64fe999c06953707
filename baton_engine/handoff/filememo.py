"""A value derived from one file, reused while the file is unchanged (same inode, size, mtime and ctime).

Why: Hermes asks ``should_compress`` several times per turn, and below the threshold the only disk work
is the detector reading the project config and the session draft. Reading and validating them again
costs milliseconds (finding a draft by id lists the whole store); one ``stat`` is microseconds. Store
writes are atomic renames of a fresh temp file, so any change gives the path a new inode or times.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

from cachetools import LRUCache

T = TypeVar("T")
Signature = tuple[int, int, int, int]


def signature(path: Path) -> Signature | None:
    """What changes whenever the file is replaced or written; None when it cannot be stat'ed."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class FileMemo:
    """``get(path, load)``: ``load()`` once per version of ``path``; bounded to ``max_entries`` paths (LRU)."""

    def __init__(self, max_entries: int) -> None:
        self._entries: LRUCache[Hashable, tuple[Signature, object]] = LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()

    def get(self, path: Path, load: Callable[[], T]) -> T:
        before = signature(path)
        with self._lock:
            hit = self._entries.get(path)
        if before is not None and hit is not None and hit[0] == before:
            return hit[1]  # type: ignore[return-value]
        value = load()
        if before is not None and signature(path) == before:  # unchanged while loading: safe to reuse
            with self._lock:
                self._entries[path] = (before, value)
        return value
