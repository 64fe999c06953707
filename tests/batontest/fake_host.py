"""A host for the core without Hermes (``agent/host.Host``): the agent's tests drive its budgeter through it.

Why a fake host: what one agent's Baton asks of its host is the ``Host`` seam alone, so core behaviour is tested
without Hermes installed. This one stores messages with a bookkeeping key (``note``) its wire never sends, as
Hermes does, and counts its projections.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton_engine.shapes import Shape
from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.chat import CHAT
from baton_engine.tokens.request_key import message_digest


class FakeHost:
    """A host whose stored messages carry a bookkeeping key (``note``) its wire never sends."""

    name = "Fake"
    window_label = "fake window"
    window_setting = "the fake window setting"

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.projected = 0

    def working_directory(self) -> Path:
        return self.cwd

    def shape_for(self, api_mode: Any) -> Shape:
        return ANTHROPIC if api_mode == "anthropic" else CHAT

    def wire_is_not_chat(self, api_mode: Any) -> bool:
        return api_mode == "anthropic"

    def project(self, message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        self.projected += 1
        sent = {key: value for key, value in message.items() if key != "note"}
        return sent, message_digest(sent)
