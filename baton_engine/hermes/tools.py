"""The engine's tools: ``baton_capture``, ``baton_resume``, ``baton_status``, ``baton_recall``.

Why through ``operations``: each tool answers with exactly the JSON the equivalent ``baton ... --json``
command prints (``baton record <kind> <ref>``, ``baton resume [ref]``, ``baton status``), because both
call the same operation through ``results.call`` and serialise it with ``results.dumps``
(``baton_status`` adds ``engine``: the session's route, window, counting and trigger, which no CLI can know).
The answer is always a JSON string; no exception reaches Hermes. There is no generic shell tool.
Every answer goes into the transcript, so every string in it is redacted first: an echoed objective,
ref or tool name must not carry a pasted secret back to the model (stored records are already redacted,
so for them this changes nothing and parity with the CLI holds).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from baton_engine import results
from baton_engine.errors import UserInputError
from baton_engine.handoff import capture
from baton_engine.handoff.owner import Scope
from baton_engine.handoff.redact import redact_text
from baton_engine.messages.markers import BATON_TOOLS
from baton_engine.operations import handoffs
from baton_engine.recall import TOOL_SCHEMA as RECALL_SCHEMA

ITEM_KINDS = capture.ITEM_KINDS
CAPTURE_KINDS = (*ITEM_KINDS, "objective", "request_handoff")
TOOL_NAMES = BATON_TOOLS
_ITEM_PROPERTIES = capture.item_properties()  # generated from the item models: the one definition
_CAPTURE_KEYS = ("kind", "item", "objective")
_error = results.error_dict

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "baton_capture",
        "description": (
            "Record durable work state for the next Baton handoff (survives context compaction): a decision, "
            "evidence, a failed attempt, an open item, or the session objective. Record facts, not chat."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": list(CAPTURE_KINDS)},
                "item": {"type": "object", "properties": _ITEM_PROPERTIES,
                         "description": "The fields of one decision / evidence / failed_attempt / open_item "
                                        "(they may also be given at the top level)."},
                "objective": {"type": "string", "description": "kind=objective: what the work must achieve"},
                **{name: prop for name, prop in _ITEM_PROPERTIES.items() if name not in _CAPTURE_KEYS},
            },
            "required": ["kind"],
        },
    },
    {
        "name": "baton_resume",
        "description": ("The resume brief of the latest ready Baton handoff of this conversation (or of `ref`), "
                        "with a freshness check; this session then continues that handoff's lineage."),
        "parameters": {
            "type": "object",
            "properties": {
                "ref": {"type": "string", "description": "Handoff id or short id (default: latest ready)."},
                "max_tokens": {"type": "integer", "minimum": 1, "description": "Brief token budget."},
            },
        },
    },
    {
        "name": "baton_status",
        "description": ("Baton status: record counts, latest ready and draft handoffs, problems, and under "
                        "`engine` this session's route, window, counting mode and compaction trigger (stuck)."),
        "parameters": {"type": "object", "properties": {}},
    },
    RECALL_SCHEMA,  # answered by recall.recall_tool over this session lineage (the engine picks the source)
]


def redacted(value: Any) -> Any:
    """``value`` with every string (at any depth) redacted; keys are Baton's own and stay."""
    if isinstance(value, str):
        return redact_text(value)[0]
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    return value


def _item_args(kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """The item's fields, nested under ``item`` or flattened at the top level (models often flatten)."""
    nested = args.get("item")
    top = {key: value for key, value in args.items() if key not in _CAPTURE_KEYS}
    if nested is None:
        return top
    if not isinstance(nested, dict):
        raise UserInputError(f"kind={kind}: 'item' must be an object with the {kind.replace('_', ' ')}'s fields")
    return {**top, **nested}


def _shape_error(kind: str, exc: UserInputError) -> dict[str, Any]:
    answer = _error("input_error", str(exc))
    answer["error"]["expected"] = {"kind": kind, **capture.expected_shape(kind)}
    return answer


class ToolHost:  # ``engine_tools.ToolHandler`` implements this protocol
    """What the tools need from the agent's engine (kept narrow so tools are testable without Hermes).

    ``scope``: the handoffs this session may see (its conversation's on a gateway, else the project's)."""

    scope: Scope

    def project_path(self) -> Path:
        raise NotImplementedError

    def continue_from(self, handoff: dict[str, Any]) -> None:
        raise NotImplementedError

    def ensure_session_draft(self, messages: list[dict[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        raise NotImplementedError

    def set_objective(self, text: str) -> None:
        raise NotImplementedError

    def request_handoff(self) -> None:
        raise NotImplementedError

    def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def agent_status(self) -> dict[str, Any]:
        raise NotImplementedError


def _capture(host: ToolHost, args: dict[str, Any], messages: list[dict[str, Any]] | None) -> dict[str, Any]:
    kind = args.get("kind")
    if kind == "objective":
        text = args.get("objective")
        if not isinstance(text, str) or not text.strip():
            return _error("input_error", "kind=objective needs a non-empty 'objective' string")
        host.set_objective(text.strip())
        return {"ok": True, "kind": "objective", "objective": text.strip()}
    if kind == "request_handoff":
        host.request_handoff()
        return {"ok": True, "kind": "request_handoff", "message": "a handoff will be made at the next check"}
    if kind not in ITEM_KINDS:
        return _error("input_error", f"kind must be one of {', '.join(CAPTURE_KINDS)}")
    try:  # validated before a session draft is made for it
        item = _item_args(kind, args)
        capture.parse_item(kind, item)
    except UserInputError as exc:
        return _shape_error(kind, exc)
    draft_id, failure = host.ensure_session_draft(messages)
    if draft_id is None:
        return failure or _error("internal_error", "no session draft")
    result, _code = results.call(handoffs.record_item, host.project_path(), draft_id, kind, item)
    return result


def _resume(host: ToolHost, args: dict[str, Any]) -> dict[str, Any]:
    ref = args.get("ref") if isinstance(args.get("ref"), str) and args.get("ref") else None
    if ref is not None and redact_text(ref)[1]:  # checked before use: a path lookup may reshape the text
        return _error("input_error", "ref looks like a secret, not a handoff; pass a handoff id, short id or path")
    max_tokens = args.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        return _error("input_error", "max_tokens must be an integer number of tokens")
    result, _code = results.call(handoffs.resume, host.project_path(), ref, max_tokens=max_tokens,
                                    scope=host.scope)
    if result.get("ok"):  # resuming is how a session takes up an earlier lineage
        host.continue_from(result["handoff"])
    return result


def _status(host: ToolHost, _args: dict[str, Any]) -> dict[str, Any]:
    """``baton status --json``'s answer plus ``engine``: what only the running engine knows."""
    result, _code = results.call(handoffs.status, host.project_path(), scope=host.scope)
    return {**result, "engine": host.agent_status()}


def handle(host: ToolHost, name: str, args: Any, messages: list[dict[str, Any]] | None = None) -> str:
    """Dispatch one tool call; always a redacted JSON string, never an exception."""
    try:
        return results.dumps(redacted(_dispatch(host, name, args, messages)))
    # Hermes' tool-call contract: handle_tool_call answers a JSON string, never a traceback into the agent's tool loop
    except Exception as exc:  # noqa: BLE001
        return results.dumps(_error("internal_error", f"unexpected {type(exc).__name__}; run `baton doctor`"))


def _dispatch(host: ToolHost, name: str, args: Any, messages: list[dict[str, Any]] | None) -> dict[str, Any]:
    if not isinstance(args, dict):
        return _error("input_error", "tool arguments must be a JSON object")
    handlers: dict[str, Callable[[], dict[str, Any]]] = {
        "baton_capture": lambda: _capture(host, args, messages),
        "baton_resume": lambda: _resume(host, args),
        "baton_status": lambda: _status(host, args),
        "baton_recall": lambda: host.recall(args),
    }
    handler = handlers.get(name)
    if handler is None:
        shown = redact_text(name)[0] if isinstance(name, str) else type(name).__name__
        return _error("input_error", f"unknown Baton tool {shown!r}; known: {', '.join(TOOL_NAMES)}")
    return handler()
