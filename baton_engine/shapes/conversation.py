"""The neutral conversation every shape is read into and written back from.

Why units: a request may be shortened only between items that do not need each other. A ``Unit`` is the
smallest run of a shape's items a provider accepts alone (an assistant turn's tool calls with every result that
answers them; a signed thinking block in its message, with its tool calls; one plain message), kept as the shape's
own items, verbatim, beside the same items as chat messages (what a counter counts). Shortening chooses units;
the shape writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from baton_engine.request import ProviderRequest


@dataclass(frozen=True)
class Unit:
    """Items of one shape that stand or fall together: ``items`` verbatim, ``chat`` the same as chat messages."""

    items: tuple[Any, ...]
    chat: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Conversation:
    """A request's conversation: ``leading`` (what every shortened request keeps first: system prompts, inside or
    beside the list; its ``chat`` is the view's system messages) and the cuttable ``units``, in order."""

    leading: Unit
    units: tuple[Unit, ...]

    def chat(self) -> list[Mapping[str, Any]]:
        """The whole conversation as chat messages (the view's messages)."""
        return [*self.leading.chat, *(message for unit in self.units for message in unit.chat)]


class Shape(Protocol):
    """What one API shape's adapter does."""

    name: str

    def read(self, request: Mapping[str, Any]) -> ProviderRequest | None:
        """The request as every count sees it; None when it holds no conversation of this shape."""

    def conversation(self, request: Mapping[str, Any]) -> Conversation | None:
        """The request's conversation as units; None when it holds none."""

    def text_item(self, role: str, text: str) -> Any:
        """A message of Baton's (a note, a notice) in this shape: ``role`` "user" or "assistant"."""

    def write(self, request: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
        """``request`` with its conversation replaced by the leading items and ``items``; every other field as it
        was (the request itself is never changed)."""


def grouped(items: Sequence[Any], joins_previous: Any) -> list[list[Any]]:
    """``items`` in runs: an item for which ``joins_previous(item)`` is true (it answers what came before: a tool
    result) stays with the run before it; every other item starts a run."""
    runs: list[list[Any]] = []
    for item in items:
        if runs and joins_previous(item):
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


def replaced(request: Mapping[str, Any], key: str, conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
    """``request`` with ``key`` holding the leading items then ``items`` (a new dict: every other field shared)."""
    return {**request, key: [*conversation.leading.items, *items]}
