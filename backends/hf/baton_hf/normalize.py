"""The request normalisation vLLM applies before it renders a chat template.

Counts must match what a vLLM server reports for ``/tokenize``; vLLM does not hand the
OpenAI request to ``apply_chat_template`` as-is, and the differences change token counts
(a naive render gave 218 instead of 228 tokens on one tool example). This module
reproduces those steps as one pure function so the hf backend, the vLLM stand-in server and
the conformance tests all render exactly the same conversation.

Ported from vLLM 0.32.0 (``vllm/renderers/chat_utils.py``, ``vllm/renderers/hf.py``,
``vllm/entrypoints/serve/tokenize``, ``FunctionDefinition`` / ``ChatCompletionToolsParam``):

* message content ``None`` -> ``""``; text parts joined with ``"\\n"`` ("string" content
  format) or kept as ``[{"type": "text", "text": ...}]`` ("openai" format, for templates
  that loop over ``message.content``); text parts whose text is ``None`` are skipped;
* only known keys survive: ``role``, ``content``, ``name`` (str), ``task`` (str);
  assistant ``tool_calls`` (an empty list is dropped) and ``reasoning`` (copied to
  ``reasoning_content`` too); tool ``tool_call_id``; developer ``tools``;
* assistant ``tool_calls[].function.arguments``: JSON strings are parsed; anything that
  is not a JSON object (invalid JSON, ``"[]"``, ``None``, ``""``) becomes ``{}``;
* system text parts lose a leading Claude Code ``x-anthropic-billing-header`` line;
* tools are re-serialised as ``{"type": "function", "function": {"name", "description",
  "parameters"[, "strict"][, "defer_loading"]}[, "defer_loading"]}`` with a missing
  description/parameters as ``None`` (strict/defer_loading only when not null);
* when the template text never quotes ``"developer"``, developer messages become
  ``system`` messages (their ``tools`` key removed) and, if a system message then sits
  anywhere but first or there are several, all system messages are merged into one string
  at position 0, joined with ``"\n\n"``;
* ``add_generation_prompt`` / ``continue_final_message`` override the same keys in
  ``chat_template_kwargs``; both true, or a ``chat_template``/``tokenize`` kwarg, is a 400.

Never mutates its input: every returned container is new.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from baton_engine.tokens.contract import copy_json

ContentFormat = Literal["string", "openai"]

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text", "refusal", "thinking"})
_PART_TEXT_KEY = {"thinking": "thinking", "refusal": "refusal"}
SYSTEM_MERGE_SEPARATOR = "\n\n"
BILLING_HEADER_PREFIX = "x-anthropic-billing-header"
_TOOL_CALL_KEYS = ("id", "type")
_FORBIDDEN_TEMPLATE_KWARGS = frozenset({"chat_template", "tokenize"})


class RequestShapeError(ValueError):
    """The chat request cannot be normalised (vLLM would answer 400).

    The message names the field, never the prompt text.
    """


@dataclass(frozen=True)
class NormalizedRequest:
    """What the template renderer receives after vLLM's normalisation.

    ``chat_template_kwargs`` already holds ``add_generation_prompt`` and
    ``continue_final_message``, as vLLM passes them to ``apply_chat_template``.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def add_generation_prompt(self) -> bool:
        return bool(self.chat_template_kwargs.get("add_generation_prompt", False))

    @property
    def continue_final_message(self) -> bool:
        return bool(self.chat_template_kwargs.get("continue_final_message", False))


def template_supports_developer(chat_template: str) -> bool:
    """vLLM's test: the template quotes the role name somewhere."""
    return '"developer"' in chat_template or "'developer'" in chat_template


def normalize_tools(tools: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Re-serialise tools the way vLLM's ``tool.model_dump()`` does."""
    if tools is None:
        return None
    return [_normalize_tool(tool, index) for index, tool in enumerate(tools)]


def normalize_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    content_format: ContentFormat = "string",
    supports_developer: bool = False,
) -> list[dict[str, Any]]:
    """Return new message dicts as vLLM passes them to the chat template."""
    converted = [_normalize_message(m, i, content_format) for i, m in enumerate(messages)]
    _postprocess_tool_calls(converted)
    if supports_developer or not any(m["role"] == "developer" for m in converted):
        return converted
    return _consolidate_system_messages([_developer_to_system(m) for m in converted])


def normalize_request(
    request: Mapping[str, Any],
    *,
    content_format: ContentFormat = "string",
    supports_developer: bool = False,
) -> NormalizedRequest:
    """Normalise a whole chat request (messages, tools and template kwargs)."""
    messages = request.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise RequestShapeError("request.messages must be a list of message objects")
    add_generation_prompt = request.get("add_generation_prompt", True)
    continue_final_message = request.get("continue_final_message", False)
    if add_generation_prompt and continue_final_message:
        raise RequestShapeError(
            "add_generation_prompt and continue_final_message cannot both be true; set one to false"
        )
    kwargs = request.get("chat_template_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise RequestShapeError("request.chat_template_kwargs must be an object")
    forbidden = sorted(_FORBIDDEN_TEMPLATE_KWARGS & kwargs.keys())
    if forbidden:
        raise RequestShapeError(f"chat_template_kwargs may not contain {forbidden}; pass them as request fields")
    merged_kwargs = copy_json(dict(kwargs))
    for key, value in (("add_generation_prompt", add_generation_prompt), ("continue_final_message", continue_final_message)):
        if value is not None and value != "auto":  # vLLM's merge_kwargs ignores unset values
            merged_kwargs[key] = value
    return NormalizedRequest(
        messages=normalize_messages(messages, content_format=content_format, supports_developer=supports_developer),
        tools=normalize_tools(request.get("tools")),
        chat_template_kwargs=merged_kwargs,
    )


def _normalize_tool(tool: Any, index: int) -> dict[str, Any]:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
        raise RequestShapeError(f"tools[{index}] must be an object with a 'function' object")
    if tool.get("type", "function") != "function":
        raise RequestShapeError(f"tools[{index}].type must be 'function'")
    function = tool["function"]
    if not isinstance(function.get("name"), str):
        raise RequestShapeError(f"tools[{index}].function.name must be a string")
    out_function: dict[str, Any] = {
        "name": function["name"],
        "description": function.get("description"),
        "parameters": copy_json(function.get("parameters")),
    }
    if function.get("strict") is not None:
        out_function["strict"] = function["strict"]
    defer_loading = function.get("defer_loading")
    if defer_loading is None:
        defer_loading = tool.get("defer_loading")
    if defer_loading is not None:
        out_function["defer_loading"] = defer_loading
    out: dict[str, Any] = {"type": "function", "function": out_function}
    if tool.get("defer_loading") is not None:
        out["defer_loading"] = tool["defer_loading"]
    return out


def _normalize_message(message: Mapping[str, Any], index: int, content_format: ContentFormat) -> dict[str, Any]:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise RequestShapeError(f"messages[{index}] must be an object with a string 'role'")
    role = message["role"]
    parts = _content_parts(message.get("content"), index)
    if role == "system":
        parts = _strip_billing_header(parts)
    out: dict[str, Any] = {"role": role, "content": _render_parts(parts, index, content_format)}
    if role == "assistant":
        if message.get("tool_calls") is not None:
            out["tool_calls"] = [_copy_tool_call(call) for call in message["tool_calls"]]
        reasoning = message.get("reasoning")
        if reasoning is not None:
            out["reasoning"] = reasoning
            out["reasoning_content"] = reasoning
    elif role == "tool":
        if "tool_call_id" in message:
            out["tool_call_id"] = message["tool_call_id"]
        if isinstance(out["content"], list):  # tool results are text: templates expect a string
            out["content"] = "\n".join(p.get("text", "") for p in out["content"])
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    if isinstance(message.get("task"), str):
        out["task"] = message["task"]
    if role == "developer":
        out["tools"] = copy_json(message.get("tools"))
    return out


def _content_parts(content: Any, index: int) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, Sequence):
        return list(content)
    raise RequestShapeError(f"messages[{index}].content must be a string, a list of parts or null")


def _strip_billing_header(parts: list[Any]) -> list[Any]:
    """Drop Claude Code's per-request attribution line from system text parts."""
    out: list[Any] = []
    for part in parts:
        text = part if isinstance(part, str) else part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
        if not (isinstance(text, str) and text.startswith(BILLING_HEADER_PREFIX)):
            out.append(part)
            continue
        rest = text.partition("\n")[2]
        if rest:
            out.append(rest if isinstance(part, str) else {**part, "text": rest})
    return out


def _render_parts(parts: list[Any], index: int, content_format: ContentFormat) -> str | list[dict[str, Any]]:
    texts = [_part_text(part, index) for part in parts]
    if content_format == "openai":  # vLLM keeps every part that has text, even ""
        return [{"type": "text", "text": t} for t in texts if t is not None]
    return "\n".join(t for t in texts if t)  # None and "" parts are both skipped


def _part_text(part: Any, index: int) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        raise RequestShapeError(f"messages[{index}].content parts must be strings or objects")
    part_type = part.get("type")
    if part_type not in TEXT_PART_TYPES:
        raise RequestShapeError(f"messages[{index}].content has a {part_type!r} part; only text parts can be counted")
    text = part.get(_PART_TEXT_KEY.get(part_type, "text"))
    if text is not None and not isinstance(text, str):
        raise RequestShapeError(f"messages[{index}].content {part_type!r} part must hold a string")
    return text


def _postprocess_tool_calls(messages: list[dict[str, Any]]) -> None:
    """Parse tool-call arguments to objects; drop an empty ``tool_calls`` list (in place, on our copies)."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls")
        if message["role"] != "assistant" or not isinstance(calls, list):
            continue
        if not calls:
            del message["tool_calls"]
            continue
        for call in calls:
            if not isinstance(call, dict):
                raise RequestShapeError(f"messages[{index}].tool_calls entries must be objects")
            function = call.get("function")
            if call.get("type", "function") != "function" or not isinstance(function, dict):
                raise RequestShapeError(f"messages[{index}].tool_calls entries must be of type 'function'")
            function["arguments"] = _parse_arguments(function.get("arguments"))


def _copy_tool_call(call: Any) -> Any:
    """Keep only the OpenAI tool-call fields (vLLM's request model drops the rest)."""
    if not isinstance(call, Mapping):
        return call  # rejected with a clear message by _postprocess_tool_calls
    out: dict[str, Any] = {key: call[key] for key in _TOOL_CALL_KEYS if key in call}
    function = call.get("function")
    if isinstance(function, Mapping):
        out["function"] = {key: copy_json(function[key]) for key in ("name", "arguments") if key in function}
    elif "function" in call:
        out["function"] = function
    return out


def _parse_arguments(arguments: Any) -> dict[str, Any]:
    """JSON-object arguments as a dict; anything else (invalid JSON, ``[]``, ``""``, None) as ``{}``."""
    if not arguments:
        return {}
    parsed = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
    return parsed if isinstance(parsed, dict) else {}


def _developer_to_system(message: dict[str, Any]) -> dict[str, Any]:
    if message["role"] != "developer":
        return message
    converted = {k: v for k, v in message.items() if k != "tools"}
    converted["role"] = "system"
    return converted


def _consolidate_system_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system_texts: list[str] = []
    others: list[dict[str, Any]] = []
    needs_merge = False
    for position, message in enumerate(messages):
        if message["role"] != "system":
            others.append(message)
            continue
        if position > 0 or system_texts:
            needs_merge = True
        content = message.get("content", "")
        if isinstance(content, list):
            content = "\n".join(p["text"] if isinstance(p, Mapping) else p for p in content if isinstance(p, str) or "text" in p)
        if content:
            system_texts.append(content)
    if not needs_merge:
        return messages
    return [{"role": "system", "content": SYSTEM_MERGE_SEPARATOR.join(system_texts)}, *others]
