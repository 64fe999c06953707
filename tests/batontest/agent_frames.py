"""A stand-in for what Hermes' loop functions hold: a local named ``agent`` with its engine and tools.

Why: Baton finds the calling agent's engine from the caller's frames (``baton_engine.hermes.caller``),
the way Hermes 0.19.0's ``conversation_loop``/``turn_context`` functions hold ``agent``. Unit tests call
the patched estimators and the middleware through ``in_agent`` so they take the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class LoopAgent:
    """The two attributes Baton reads from a Hermes ``AIAgent``."""

    def __init__(self, engine: Any, tools: list[dict[str, Any]] | None = None) -> None:
        self.context_compressor = engine
        self.tools = tools


def in_agent(agent: LoopAgent, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``call`` from a frame whose local ``agent`` is ``agent`` (as Hermes' loop does)."""
    return call(*args, **kwargs)
