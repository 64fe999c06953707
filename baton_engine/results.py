"""The result contract every surface answers with: a JSON-able dict, its ``--json`` text, the error shape.

Why in the foundation, beside ``errors``: the CLI, the Hermes engine tools, the MCP server and the core's own
tool entry points (``recall/tool.py``, a session's draft in ``compaction/session.py``) must give the same
answer for the same request, so they share one shape and one runner that never raises a ``BatonError``.
Every result starts with ``"ok"``; an error is ``{"ok": false, "error": {"kind", "message"}}`` plus any
``exc.details`` keys (e.g. ``validation``). Key order is fixed by construction, so ``dumps`` is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from baton_engine.errors import BatonError, ValidationFailed


def dumps(result: dict[str, Any]) -> str:
    """The ``--json`` text of a result (the engine tools answer with the same bytes): the operation's key
    order, UTF-8 kept readable."""
    return json.dumps(result, indent=2, ensure_ascii=False)


def error_dict(kind: str, message: str) -> dict[str, Any]:
    """The shape of every error answer: ``{"ok": false, "error": {"kind", "message"}}``."""
    return {"ok": False, "error": {"kind": kind, "message": message}}


def error_result(exc: BatonError) -> dict[str, Any]:
    """The error dict every surface prints for a BatonError (message only: never a traceback or a value)."""
    result = error_dict(exc.kind, str(exc))
    result.update(getattr(exc, "details", None) or {})
    return result


INTERNAL_ERROR_EXIT_CODE = 1


def call(operation: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
    """Run an operation for a surface that must never raise (CLI, engine tools, MCP): (result dict, exit code).

    A result with ``"ok": false`` (e.g. a failing doctor) exits 3. An unexpected exception becomes an
    ``internal_error`` naming only its type: its message could quote record content.
    """
    try:
        result = operation(*args, **kwargs)
    except BatonError as exc:
        return error_result(exc), exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the surfaces promise a JSON answer, never a traceback
        message = f"unexpected {type(exc).__name__}; run `baton doctor` and report it if it persists"
        return error_dict("internal_error", message), INTERNAL_ERROR_EXIT_CODE
    return result, 0 if result.get("ok", True) else ValidationFailed.exit_code
