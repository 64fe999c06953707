"""The engine's tools (``baton_capture``, ``baton_resume``, ``baton_status``, ``baton_recall``) bound to one agent.

Why a collaborator of its own: ``agent.tools`` needs a narrow host (``tools.ToolHost``): the session's lineage and
draft (the compaction runner), where recall reads, and the engine part of ``baton_status``; this object is
that host, built from those collaborators, so the tools never see the engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton_engine.agent import tools
from baton_engine.agent import status
from baton_engine.agent.compactions import CompactionRunner
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import RequestBudgeter
from baton_engine.handoff.owner import Scope
from baton_engine.operations.context import host_counting


class ToolHandler(tools.ToolHost):
    """One agent's tool calls: each counted like its requests (its settings, its route's counter)."""

    def __init__(self, compaction: CompactionRunner, requests: RequestBudgeter, recall: RecallBinding) -> None:
        self.compaction = compaction
        self.requests = requests
        self.recall_binding = recall

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas of the tools this session's settings offer (``tools``)."""
        return tools.schemas(self.compaction.settings().tools)

    def handle(self, name: str, args: dict[str, Any], messages: Any) -> str:
        # baton_resume counts like the engine: this session's settings, its route's counter
        with host_counting(self.compaction.settings(), self.requests.counting().counter):
            return tools.handle(self, name, args, messages if isinstance(messages, list) else None)

    # ---- tools.ToolHost ----------------------------------------------------------------------------

    @property
    def scope(self) -> Scope:  # type: ignore[override]
        return self.compaction.scope

    def project_path(self) -> Path:
        return self.compaction.project.path()

    def continue_from(self, handoff: dict[str, Any]) -> None:
        self.compaction.continue_from(handoff)

    def ensure_session_draft(self, messages: list[dict[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        return self.compaction.ensure_session_draft(messages)

    def set_objective(self, text: str) -> None:
        self.compaction.set_objective(text)

    def request_handoff(self) -> None:
        self.compaction.request_handoff()

    def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        """``baton_recall`` over this lineage."""
        return self.recall_binding.recall(args, self.compaction.session_id)

    def agent_status(self) -> dict[str, Any]:
        return status.agent_status(self.requests, self.compaction, self.recall_binding)
