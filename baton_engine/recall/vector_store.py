"""Passage vectors on disk, beside the project's records: a derived index, so a restart does not re-embed.

Why on disk: embedding a long session's passages takes minutes on a CPU model; recomputing them after every
restart of Hermes would leave recall lexical for that long. What is stored is vectors only, never text: a row is
(embedder name, digest of the embedded text, float32 vector), the digest a keyed BLAKE2b (the key random per store,
kept in the store) so a row cannot be checked against a guessed text elsewhere. SQLite because rows are added
incrementally from the background worker while searches read; ranking happens in memory (``vector_index.py``), so
the file needs no vector library (docs/recall.md measures both).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

FILE_NAME = "vectors.sqlite3"
KEY_BYTES = 32
DIGEST_BYTES = 16
# A row (a 384-float32 vector is 1,536 bytes) over about a quarter of a page goes to overflow pages in a WITHOUT
# ROWID table: with SQLite's default 4 KB pages a row took 4,699 bytes of file, with 16 KB pages 1,917 (3,000 rows,
# FINDINGS 20).
PAGE_BYTES = 16384
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, digest BLOB NOT NULL, vector BLOB NOT NULL, "
    "PRIMARY KEY (embedder, digest)) WITHOUT ROWID",
)


class VectorStore:
    """Vectors by (embedder name, text digest) in ``directory``/vectors.sqlite3 (created on first use)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / FILE_NAME
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute(f"PRAGMA page_size={PAGE_BYTES}")  # a new file only: an existing one keeps its pages
        self._db.execute("PRAGMA journal_mode=WAL")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('key', ?)", (os.urandom(KEY_BYTES),))
        (self._key,) = self._db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()

    def digest(self, text: str) -> bytes:
        """The row key of ``text`` (keyed: the same text has another digest in another store)."""
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=self._key,
                               digest_size=DIGEST_BYTES).digest()

    def get(self, embedder: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        """digest -> the stored float32 vector's bytes, for those of ``digests`` stored for ``embedder``."""
        found: dict[bytes, bytes] = {}
        with self._lock:
            for start in range(0, len(digests), 500):  # under SQLite's bound-parameter limit
                chunk = list(digests[start:start + 500])
                marks = ",".join("?" * len(chunk))
                found.update(self._db.execute(
                    f"SELECT digest, vector FROM vectors WHERE embedder = ? AND digest IN ({marks})",  # noqa: S608
                    [embedder, *chunk]).fetchall())
        return found

    def put(self, embedder: str, rows: Iterable[tuple[bytes, bytes]]) -> None:
        """Store (digest, float32 vector bytes) rows for ``embedder`` in one transaction."""
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(embedder, digest, vector) for digest, vector in rows])
            self._db.execute("COMMIT")

    def count(self, embedder: str) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM vectors WHERE embedder = ?", (embedder,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
