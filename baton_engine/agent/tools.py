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
from baton_engine.tokens.contract import TokenCount

ITEM_KINDS = capture.ITEM_KINDS
CAPTURE_KINDS = (*ITEM_KINDS, "objective", "request_handoff")
TOOL_NAMES = BATON_TOOLS
_ITEM_PROPERTIES = capture.item_properties()  # generated from the item models: the one definition
_CAPTURE_KEYS = ("kind", "item", "objective")
# what a tool call answers when Baton failed around it (the host's boundary answers it): still JSON, never a traceback
INTERNAL_ERROR = results.dumps(results.error_dict("internal_error", "Baton failed around the tool; run `baton doctor`"))
# The fields the schema shows: each kind's main ones. Every request carries the schemas (docs/hermes.md, "What Baton
# adds to every request": <= 600 tokens for the four), so the others (ids, timestamps, alternatives, blocked_by, ...)
# are accepted without being shown; a wrong call's answer lists them all (``expected``).
_SHOWN_FIELDS = ("decision", "rationale", "claim", "ref", "result", "attempt", "outcome", "description", "priority")
_error = results.error_dict


def _shown(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as the schema shows it: its type and enum (the description says which kind it belongs to; the
    models check the bounds)."""
    return {key: prop[key] for key in ("type", "enum") if key in prop}


SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "baton_capture",
        "description": ("Record work state for Baton's next handoff (survives compaction); facts, not chat. Fields "
                        "by kind: decision: decision, rationale; evidence: claim, ref, result; failed_attempt: "
                        "attempt, outcome; open_item: description, priority; objective: objective."),
        "parameters": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": list(CAPTURE_KINDS)},
                **{name: _shown(_ITEM_PROPERTIES[name]) for name in _SHOWN_FIELDS},
                "objective": {"type": "string"},
            },
            "required": ["kind"],
        },
    },
    {
        "name": "baton_resume",
        "description": "The brief of the latest ready Baton handoff (or `ref`); this session continues it.",
        "parameters": {"type": "object", "properties": {"ref": {"type": "string", "description": "handoff id"}}},
    },
    {
        "name": "baton_status",
        "description": "Baton's handoffs and this session's window, counting and trigger.",
        "parameters": {"type": "object", "properties": {}},
    },
    RECALL_SCHEMA,  # answered by recall.recall_tool over this session lineage (the engine picks the source)
]


def schemas(offered: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The schemas of the tools ``offered`` (the ``tools`` setting), each a fresh copy."""
    return [dict(schema) for schema in SCHEMAS if schema["name"] in offered]


# A request that already carries one tool, as every Hermes request carries Hermes' own: what Baton's schemas add to
# it leaves out the chat template's once-per-request tools preamble, which Hermes' tools pay for anyway.
_BASE_REQUEST: dict[str, Any] = {
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {
        "name": "terminal", "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}],
}


def schema_tokens(count_chat: Callable[[dict[str, Any]], TokenCount], offered: tuple[str, ...] = TOOL_NAMES,
                  ) -> int | None:
    """The tokens the schemas of the tools ``offered`` add to every request, counted with ``count_chat`` (a
    route's counter: exact where its tokenizer is); None when it cannot count."""
    base = count_chat(_BASE_REQUEST)
    added = [{"type": "function", "function": schema} for schema in schemas(offered)]
    full = count_chat({**_BASE_REQUEST, "tools": [*_BASE_REQUEST["tools"], *added]})
    if base.tokens is None or full.tokens is None:
        return None
    return full.tokens - base.tokens


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


class ToolHost:  # ``tool_handler.ToolHandler`` implements this protocol
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
    """Dispatch one tool call: a redacted JSON string for every answer, an error included. A bug raises to the
    host's boundary, which answers ``INTERNAL_ERROR``."""
    return results.dumps(redacted(_dispatch(host, name, args, messages)))


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
