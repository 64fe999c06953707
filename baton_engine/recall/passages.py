"""Cut a compacted message into passages: the units recall ranks and answers with.

Why passages and not whole messages: the answer to a question is one line of a 150-line tool result, and a hit
must carry THOSE lines (not the first ones) within a small budget; BM25's length normalisation and a sentence
embedder's input limit (about 256 word pieces) also both want short units. A passage is a run of whole lines of
the message's text, at most ``PASSAGE_LINES`` lines and ``PASSAGE_CHARS`` characters (a longer single line is
one passage of its own); a short message is one passage.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton_engine.messages.entry import Entry

PASSAGE_LINES = 6
PASSAGE_CHARS = 600


@dataclass(frozen=True)
class Passage:
    """Lines ``first_line``..``last_line`` (1-based, inclusive) of ``entry.text``."""

    entry: Entry
    first_line: int
    last_line: int
    text: str


def passages(entry: Entry) -> list[Passage]:
    """The passages of ``entry`` in order; every line of its text is in exactly one of them."""
    lines = entry.text.split("\n")
    found: list[Passage] = []
    start, size = 0, 0
    for index, line in enumerate(lines):
        full = index - start >= PASSAGE_LINES or (index > start and size + len(line) + 1 > PASSAGE_CHARS)
        if full:
            found.append(Passage(entry, start + 1, index, "\n".join(lines[start:index])))
            start, size = index, 0
        size += len(line) + 1
    found.append(Passage(entry, start + 1, len(lines), "\n".join(lines[start:])))
    return [passage for passage in found if passage.text.strip()] or found[:1]
