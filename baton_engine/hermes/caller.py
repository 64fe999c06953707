"""Which agent is asking: the Baton engine of the Hermes agent whose loop called an estimator or middleware.

Why frames: Hermes 0.19.0 calls the estimators and the ``llm_request`` middleware without naming the
agent, and a process may run many agents (the gateway), each with its own engine copy, tools and
window. Its loop functions hold the agent as a local named ``agent`` (or ``self`` inside ``AIAgent``),
so the nearest such frame identifies it. Guarded: ``sys._getframe`` is CPython's; without it, or when
no frame holds a Baton engine, callers fall back to the session-id registry (``agent/runtime.EngineRegistry``)
and then to leaving the request alone. Only the calls that do not name the agent need this (the hooks Hermes calls
on the agent's own engine do not), and no per-agent state rests on it: memos, ledger and route live on the engine
it finds.
"""

from __future__ import annotations

import sys
from typing import Any

MAX_DEPTH = 16
_AGENT_NAMES = ("agent", "self", "parent_agent")
_ENGINE_TYPES: list[type] = []


def register_engine_type(engine_type: type) -> type:
    """Declare ``engine_type`` (``BatonContextEngine``) as the engine callers look for. Why a registry here: the
    patches and the refusal observer sit below the engine (the engine's module imports Hermes); they find its
    instances through this list, never by importing it. No type registered means no such engine exists yet."""
    if engine_type not in _ENGINE_TYPES:
        _ENGINE_TYPES.append(engine_type)
    return engine_type


def engine_types() -> tuple[type, ...]:
    return tuple(_ENGINE_TYPES)


def engine_of(candidate: Any, engine_type: type | tuple[type, ...]) -> Any | None:
    """``candidate.context_compressor`` when it is an ``engine_type``."""
    engine = getattr(candidate, "context_compressor", None) if candidate is not None else None
    return engine if isinstance(engine, engine_type) else None


def calling_agent(engine_type: type | tuple[type, ...], *, skip: int = 1) -> tuple[Any, Any] | None:
    """``(agent, engine)`` of the nearest calling frame whose ``agent``/``self`` local is a Hermes agent
    with an ``engine_type`` engine."""
    getframe = getattr(sys, "_getframe", None)
    if getframe is None:
        return None
    try:
        frame = getframe(skip + 1)
    except ValueError:
        return None
    depth = 0
    while frame is not None and depth < MAX_DEPTH:
        local = frame.f_locals
        for name in _AGENT_NAMES:
            candidate = local.get(name)
            engine = engine_of(candidate, engine_type)
            if engine is not None:
                return candidate, engine
        frame, depth = frame.f_back, depth + 1
    return None

