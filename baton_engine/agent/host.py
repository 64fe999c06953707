"""``Host``: what one agent's Baton needs to know of the agent it runs in, and nothing more.

Why a seam and not an import: the request budgeter, the project, the compaction runner, recall and status
(``agent/``) decide for any agent, but a few facts are the host's own: its name, where its agent works, which
request shape it sends in an API mode, how its stored messages project to the neutral ``ProviderRequest`` (the
rest of an estimate's view is the agent's frame: ``agent/memos.AgentMemos.estimate``), and the name of the window
it configures. The
host implements this once at its edge (Hermes: ``hermes/host.HermesHost`` over ``hermes/request_view`` and
``hermes/config``) and passes it to ``Project`` and ``RequestBudgeter`` (the others ask the budgeter's); the
process-wide view of its main route and window is the runtime's (``agent/runtime.HostView``).

A host object is kept on every engine copy (Hermes deep-copies its engine per agent): make it stateless, and let a
copy be the object itself (``__deepcopy__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from baton_engine.shapes import Shape


class Host(Protocol):
    """The host's side of one agent's Baton."""

    @property
    def name(self) -> str:
        """The host's name as its user knows it (Hermes: ``"Hermes"``), in the words Baton writes for that user (a
        handoff's automation reason, status); lower-cased, it names the host's sizes, sessions and store."""
        ...

    @property
    def window_label(self) -> str:
        """The name of the window the host configures, as a window's source says it (``window_source``; Hermes:
        ``"hermes context_length"``)."""
        ...

    @property
    def window_setting(self) -> str:
        """Where the user sets that window, as a fix names it (Hermes: ``"model.context_length in config.yaml"``)."""
        ...

    def working_directory(self) -> Path:
        """The agent's working directory, where its project is found when none is named."""
        ...

    def shape_for(self, api_mode: Any) -> Shape:
        """The adapter of the request shape the host sends in ``api_mode``."""
        ...

    def wire_is_not_chat(self, api_mode: Any) -> bool:
        """Whether ``api_mode``'s transport sends another shape than the chat messages its estimators see (a
        request is then matched to its estimate by content)."""
        ...

    def project(self, message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        """One stored message as sent, and its key digest (``agent/memos.Projection``)."""
        ...
