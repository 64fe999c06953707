"""``RecallSource``: where recall reads the compacted messages of a session lineage from.

Two implementations behind it: Hermes' session store (``session_store.py``) and the in-process index
(``memory.py``); search and expand read only this protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from baton_engine.messages.entry import Entry


class RecallSource(Protocol):
    """The messages of ONE session lineage that were compacted away, in order."""

    def entries(self) -> Sequence[Entry]: ...

    def get(self, ref: str) -> Entry | None: ...
