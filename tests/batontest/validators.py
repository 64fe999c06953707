"""A validator per API shape: does the provider accept this request?

Structure from the providers' own SDK types: the ``anthropic`` and ``openai`` packages' request TypedDicts through
a pydantic ``TypeAdapter`` (their ``Iterable`` fields validate lazily: every one is consumed here), botocore's
Converse service model through its ``ParamValidator``. Pairing rules from the providers' docs, which no type says:

- Anthropic Messages: extended thinking's ``budget_tokens`` is at least 1,024 and less than ``max_tokens``; roles
  alternate from ``user``; every ``tool_result`` answers a ``tool_use`` of the message
  just before and comes before any other block of its message; every ``tool_use`` of a message that is not the last
  is answered in the next one; with thinking enabled, when the request ends with tool results, the assistant message
  they answer starts with its (signed) thinking block (the API's "a final assistant message must start with a
  thinking block").
- Bedrock Converse: the same with ``toolUse`` / ``toolResult`` / ``reasoningContent``; no blank text block.
- Responses: every ``function_call_output`` has its ``function_call`` before it, every ``function_call`` its
  output; a ``reasoning`` item is followed by another item.
- Chat completions: every ``tool`` message answers a ``tool_call`` of the assistant before it, and every
  ``tool_call`` is answered before the next non-tool message.

Each validator returns the problems found ([] when the provider would accept the request).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

# Keyword arguments of the SDKs' create() that are not part of the request body, and the markers Hermes' Bedrock
# transport adds and pops before it calls ``converse`` (agent/chat_completion_helpers.py).
SDK_ARGUMENTS = ("extra_headers", "extra_query", "extra_body", "timeout", "__bedrock_converse__", "__bedrock_region__")


@functools.cache
def _adapter(name: str) -> Any:
    from pydantic import TypeAdapter

    if name == "anthropic_messages":
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as params
    elif name == "codex_responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming as params
    else:
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as params
    return TypeAdapter(params)


@functools.cache
def _converse() -> tuple[Any, Any]:
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return ParamValidator(), model.operation_model("Converse").input_shape


def _consumed(value: Any) -> Any:
    """``value`` with every lazily validated iterable consumed (its items validated)."""
    if isinstance(value, Mapping):
        return {key: _consumed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [_consumed(item) for item in value]
    return value


# Per Responses content part type: the fields the API fills in itself that the SDK's param types require.
PART_DEFAULTS = {
    "output_text": {"annotations": []},  # a replayed assistant message's text (Hermes replays it without)
    "input_image": {"detail": "auto"},  # an image (the API's documented default; Hermes sends none)
}


def _api_defaults(body: dict[str, Any]) -> dict[str, Any]:
    """The Responses body with what the API fills in itself and the SDK's param types require (``PART_DEFAULTS``)."""
    items = body.get("input")
    if not isinstance(items, list):
        return body

    def filled(item: Any) -> Any:
        if not (isinstance(item, Mapping) and isinstance(item.get("content"), list)):
            return item
        return {**item, "content": [{**PART_DEFAULTS.get(part.get("type"), {}), **part}
                                    if isinstance(part, Mapping) else part for part in item["content"]]}

    return {**body, "input": [filled(item) for item in items]}


def sdk_errors(shape: str, request: Mapping[str, Any]) -> list[str]:
    """What the provider's SDK types say is wrong with the request body."""
    body = {key: value for key, value in request.items() if key not in SDK_ARGUMENTS and key != "stream"}
    if shape == "codex_responses":
        body = _api_defaults(body)
    if shape == "bedrock_converse":
        validator, input_shape = _converse()
        report = validator.validate(body, input_shape)
        return [report.generate_report()] if report.has_errors() else []
    from pydantic import ValidationError

    try:
        _consumed(_adapter(shape).validate_python(body))
    except ValidationError as error:
        return [f"{shape}: {e['loc']}: {e['msg']}" for e in error.errors()[:5]]
    return []


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _alternating_pairs(messages: list[Mapping[str, Any]], use: Callable[[Mapping[str, Any]], str | None],
                       result: Callable[[Mapping[str, Any]], str | None], thinks: Callable[[Mapping[str, Any]], bool],
                       thinking: bool) -> list[str]:
    """The pairing rules Anthropic Messages and Bedrock Converse share (``use`` / ``result``: a block's tool call or
    result id, else None; ``thinks``: a block is a thinking block)."""
    problems = []
    if not messages or messages[0].get("role") != "user":
        problems.append("the first message is not a user message")
    for index, message in enumerate(messages):
        if index and message.get("role") == messages[index - 1].get("role"):
            problems.append(f"messages {index - 1} and {index} have the same role")
        blocks = _blocks(message)
        results = [result(b) for b in blocks if result(b) is not None]
        if results:
            previous = _blocks(messages[index - 1]) if index else []
            calls = {use(b) for b in previous if use(b) is not None}
            problems += [f"message {index}: result {r} answers no call of the message before" for r in results
                         if r not in calls]
            first_other = next((i for i, b in enumerate(blocks) if result(b) is None), len(blocks))
            if any(result(b) is not None for b in blocks[first_other:]):
                problems.append(f"message {index}: a tool result after another block")
        calls = [use(b) for b in blocks if use(b) is not None]
        if calls and index + 1 < len(messages):
            answered = {result(b) for b in _blocks(messages[index + 1])}
            problems += [f"message {index}: call {c} is not answered in the next message" for c in calls
                         if c not in answered]
    if thinking and len(messages) > 1 and any(result(b) is not None for b in _blocks(messages[-1])):
        opening = _blocks(messages[-2])
        if not (opening and thinks(opening[0])):
            problems.append("the assistant message the last tool results answer does not start with its thinking")
    return problems


def _thinking_budget_errors(request: Mapping[str, Any]) -> list[str]:
    """Anthropic's rule for extended thinking's ``budget_tokens``: at least 1,024 and less than ``max_tokens``."""
    thinking = request.get("thinking")
    if not (isinstance(thinking, Mapping) and thinking.get("type") == "enabled"):
        return []
    budget, cap = thinking.get("budget_tokens"), request.get("max_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return [f"thinking.budget_tokens {budget!r} is below 1,024"]
    if isinstance(cap, int) and budget >= cap:
        return [f"thinking.budget_tokens {budget} is not less than max_tokens {cap}"]
    return []


def anthropic_errors(request: Mapping[str, Any]) -> list[str]:
    thinking = isinstance(request.get("thinking"), Mapping) and request["thinking"].get("type") in (
        "enabled", "adaptive")
    return sdk_errors("anthropic_messages", request) + _thinking_budget_errors(request) + _alternating_pairs(
        list(request.get("messages") or []),
        use=lambda b: b.get("id") if b.get("type") == "tool_use" else None,
        result=lambda b: b.get("tool_use_id") if b.get("type") == "tool_result" else None,
        thinks=lambda b: b.get("type") in ("thinking", "redacted_thinking"), thinking=thinking)


def bedrock_errors(request: Mapping[str, Any]) -> list[str]:
    messages = list(request.get("messages") or [])
    thinking = any("reasoningContent" in b for m in messages for b in _blocks(m))
    blank = [f"message {i}: a blank text block" for i, m in enumerate(messages) for b in _blocks(m)
             if "text" in b and not str(b["text"]).strip()]
    return sdk_errors("bedrock_converse", request) + blank + _alternating_pairs(
        messages,
        use=lambda b: b["toolUse"].get("toolUseId") if isinstance(b.get("toolUse"), Mapping) else None,
        result=lambda b: b["toolResult"].get("toolUseId") if isinstance(b.get("toolResult"), Mapping) else None,
        thinks=lambda b: "reasoningContent" in b, thinking=thinking)


def responses_errors(request: Mapping[str, Any]) -> list[str]:
    items = [i for i in request.get("input") or [] if isinstance(i, Mapping)]
    problems, calls = [], set()
    outputs = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            calls.add(item.get("call_id"))
            if item.get("call_id") not in outputs:
                problems.append(f"input {index}: no output for function call {item.get('call_id')}")
        elif kind == "function_call_output" and item.get("call_id") not in calls:
            problems.append(f"input {index}: output for {item.get('call_id')} has no function call before it")
        elif kind == "reasoning" and index + 1 == len(items):
            problems.append(f"input {index}: a reasoning item without its following item")
    return sdk_errors("codex_responses", request) + problems


def chat_errors(request: Mapping[str, Any]) -> list[str]:
    messages = [m for m in request.get("messages") or [] if isinstance(m, Mapping)]
    problems: list[str] = []
    open_calls: set[Any] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                problems.append(f"message {index}: a tool message answers no call of the assistant before it")
            open_calls.discard(message.get("tool_call_id"))
            continue
        if open_calls:
            problems.append(f"message {index}: calls {sorted(map(str, open_calls))} were never answered")
        open_calls = {c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, Mapping)}
    if open_calls:
        problems.append(f"calls {sorted(map(str, open_calls))} of the last message were never answered")
    return sdk_errors("chat_completions", request) + problems


VALIDATORS: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "anthropic_messages": anthropic_errors, "bedrock_converse": bedrock_errors, "codex_responses": responses_errors,
    "chat_completions": chat_errors,
}
