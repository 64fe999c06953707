"""One request shortened to fit, in any API shape: the most recent whole units of its conversation behind Baton's
note, within a token budget.

Why apart from ``builder.degrade``: that one rewrites Hermes' stored chat transcript; this one cuts a request as
its shape's adapter read it (``shapes.Conversation``), so a tool call keeps all its results, a thinking block its
turn, and the note is written by the adapter in the shape's own form. The budget counts what is sent: Baton's
note and notice, the carried request and the tail, as chat messages (what a counter counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from baton_engine.compaction.builder import (
    CountTokens,
    DegradeReason,
    Message,
    GuardedCounter,
    longest_fitting_suffix,
    baton_head,
    degraded_header,
)
from baton_engine.compaction.sanitize import is_real_user_request
from baton_engine.messages.markers import degraded_notice_text, embedded_block, is_baton_message
from baton_engine.shapes import Conversation, Unit


@dataclass(frozen=True)
class Shortened:
    """What a shortened request carries after its leading items: Baton's ``head`` (chat text messages the adapter
    writes in its shape), then the kept ``units``; ``tokens``: their count; ``dropped``: units left out."""

    head: list[Message]
    units: list[Unit]
    tokens: int
    dropped: int

    def chat(self) -> list[Mapping[str, Any]]:
        """Head and kept units as chat messages (the shortened view's conversation)."""
        return [*self.head, *(message for unit in self.units for message in unit.chat)]


def shorten(conversation: Conversation, *, reason: DegradeReason | str, max_tokens: int,
            count_tokens: CountTokens) -> Shortened | None:
    """The longest suffix of whole units that fits ``max_tokens`` together with the note (and the latest user
    request, carried when it is older than the suffix); an earlier Baton block moves into the note (it still
    describes everything before it). None when no unit can be left out."""
    counter = GuardedCounter(count_tokens)
    header = degraded_header(reason)[1]
    units: list[Unit] = []
    for unit in conversation.units:
        if len(unit.chat) == 1 and is_baton_message(dict(unit.chat[0])):
            header = f"{header}\n\n{block}" if (block := embedded_block(dict(unit.chat[0]))) else header
        else:
            units.append(unit)
    latest = max((i for i, unit in enumerate(units) if len(unit.chat) == 1 and unit.chat[0].get("role") == "user"
                  and is_real_user_request(dict(unit.chat[0]))), default=None)
    notice = degraded_notice_text()

    def candidate(start: int) -> tuple[list[Message], list[Unit]]:
        kept = ([units[latest]] if latest is not None and latest < start else []) + units[start:]
        return baton_head(header, notice, kept[0].chat[0].get("role") if kept and kept[0].chat else None), kept

    def tokens(start: int) -> int:
        head, kept = candidate(start)
        return counter([*head, *(dict(message) for unit in kept for message in unit.chat)])

    start = longest_fitting_suffix(len(units), lambda start: tokens(start) <= max_tokens)
    if start == 0 and len(units) == len(conversation.units):
        return None
    head, kept = candidate(start)
    return Shortened(head, kept, tokens(start), len(conversation.units) - len(kept))
