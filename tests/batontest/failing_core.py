"""A Baton whose core fails under every hook: each method of the engine's collaborators raises.

Why the collaborators: every entry point Hermes calls (the engine's hooks, its tools and status, the middleware,
the estimator and refusal patches) reaches Baton's core through them (``RequestBudgeter``, ``CompactionRunner``,
``RecallBinding``, ``ScanAhead``, ``ToolHandler``, ``status``), so with all of them failing each entry point has
only its boundary (``hermes/guard.py``) between the fault and Hermes. The fault's message quotes the call's
arguments (a prompt, say): a log that printed it would show the prompt.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

COLLABORATORS = (("baton_engine.agent.requests", "RequestBudgeter"),
                 ("baton_engine.agent.requests", "ScanAhead"),
                 ("baton_engine.agent.compactions", "CompactionRunner"),
                 ("baton_engine.agent.recall_binding", "RecallBinding"),
                 ("baton_engine.agent.tool_handler", "ToolHandler"))
FUNCTIONS = (("baton_engine.agent.status", "engine_status"), ("baton_engine.agent.status", "agent_status"))


def fault_type(name: str = "CoreFault") -> type[RuntimeError]:
    """A fault type of its own name (the boundary says each kind once: a test that counts lines needs a new one)."""
    return type(name, (RuntimeError,), {})


def fail_core(setattr_: Callable[[Any, str, Any], None] = setattr, fault: type[Exception] | None = None) -> list[str]:
    """Make every method of the collaborators and the status functions raise ``fault`` (a ``CoreFault``);
    ``setattr_`` is ``monkeypatch.setattr`` in a test (undone after it), plain ``setattr`` in a driver process.
    Returns what was replaced."""
    error = fault or fault_type()

    def raising(*args: Any, **kwargs: Any) -> Any:
        raise error(f"core failed on {args[1:]!r} {kwargs!r}"[:400])

    replaced = []
    for module_name, class_name in COLLABORATORS:
        cls = getattr(importlib.import_module(module_name), class_name)
        for name, member in vars(cls).items():
            if not name.startswith("__") and (inspect.isfunction(member) or isinstance(member, staticmethod)):
                setattr_(cls, name, raising)
                replaced.append(f"{class_name}.{name}")
    for module_name, name in FUNCTIONS:
        setattr_(importlib.import_module(module_name), name, raising)
        replaced.append(name)
    return replaced
