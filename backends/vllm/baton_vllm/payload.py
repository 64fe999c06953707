"""Turn a provider chat request into vLLM /tokenize request bodies (pure; never mutates its input).

Mirrors what the OpenAI client would send to vLLM's chat completions, restricted to the fields
/tokenize understands. vLLM normalises the messages itself, so we only materialise them as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baton_engine.tokens.contract import ChatRequest, RequestNotCountable, copy_json

# Fields /tokenize reads in its chat form; the OpenAI client merges extra_body over the request.
_PROMPT_OPTIONS = (
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
    "chat_template",
    "chat_template_kwargs",
    "mm_processor_kwargs",
    "media_io_kwargs",
)
# tool_choice values whose prompt vLLM renders exactly like /tokenize does (tools kept as given).
_MIRRORED_TOOL_CHOICES = (None, "auto", "none")


def chat_payload(request: ChatRequest, model: str | None) -> dict[str, Any]:
    """The /tokenize chat-form body, or RequestNotCountable when /tokenize cannot see what changes the prompt."""
    if not isinstance(request, Mapping):
        raise RequestNotCountable(f"chat request must be a mapping, got {type(request).__name__}")
    extra = request.get("extra_body")
    extra = extra if isinstance(extra, Mapping) else {}

    def pick(key: str) -> Any:
        return extra[key] if key in extra else request.get(key)

    messages = pick("messages")
    if not isinstance(messages, (list, tuple)):
        raise RequestNotCountable("chat request has no messages list")
    tools = pick("tools")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise RequestNotCountable(f"chat request tools must be a list, got {type(tools).__name__}")
    if tools and pick("tool_choice") not in _MIRRORED_TOOL_CHOICES:
        raise RequestNotCountable("vLLM /tokenize cannot mirror a tool_choice other than none/auto")
    if pick("response_format") is not None:
        raise RequestNotCountable("vLLM /tokenize cannot mirror response_format")

    _check_tool_call_arguments(messages)
    payload: dict[str, Any] = {}
    chosen_model = model or pick("model")
    if chosen_model:
        payload["model"] = chosen_model
    payload["messages"] = [_message(m) for m in messages]
    if tools:
        payload["tools"] = tools
    for option in _PROMPT_OPTIONS:
        if option in extra or option in request:
            payload[option] = pick(option)
    _fold_template_kwargs(payload, pick("reasoning_effort"), pick("documents"))
    payload.setdefault("add_generation_prompt", True)
    if payload["add_generation_prompt"] and payload.get("continue_final_message"):
        raise RequestNotCountable("add_generation_prompt and continue_final_message cannot both be true")
    return copy_json(payload)


def text_payload(text: str, model: str | None) -> dict[str, Any]:
    """The /tokenize completion-form body: plain text, no special tokens (brief budgets)."""
    if not isinstance(text, str):
        raise RequestNotCountable(f"text must be a str, got {type(text).__name__}")
    payload: dict[str, Any] = {"prompt": text, "add_special_tokens": False}
    if model:
        payload["model"] = model
    return payload


def has_tool_call_history(payload: Mapping[str, Any]) -> bool:
    """True when an assistant message carries tool_calls (what vLLM's mistral mode cannot render)."""
    return any(
        isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("tool_calls")
        for m in payload.get("messages", ())
    )


def _check_tool_call_arguments(messages: list[Any] | tuple[Any, ...]) -> None:
    """vLLM's request schema wants ``function.arguments`` as a string (even invalid JSON); a dict
    or null is a 400 there, so a count would describe a request the server never accepts."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in calls if isinstance(calls, (list, tuple)) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and not isinstance(function.get("arguments"), str):
                raise RequestNotCountable(
                    f"messages[{index}].tool_calls[].function.arguments must be a JSON string "
                    f"(got {type(function.get('arguments')).__name__}); vLLM rejects it"
                )


def _message(message: Any) -> Any:
    """vLLM still accepts the deprecated ``reasoning_content``; it renders as ``reasoning``."""
    if not isinstance(message, Mapping) or "reasoning_content" not in message:
        return message
    moved = {k: v for k, v in message.items() if k != "reasoning_content"}
    if message["reasoning_content"] is not None and moved.get("reasoning") is None:
        moved["reasoning"] = message["reasoning_content"]
    return moved


def _fold_template_kwargs(payload: dict[str, Any], reasoning_effort: Any, documents: Any) -> None:
    """Chat completions passes these to the template; /tokenize only takes chat_template_kwargs."""
    kwargs = payload.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise RequestNotCountable(f"chat_template_kwargs must be a mapping, got {type(kwargs).__name__}")
    if documents is None and reasoning_effort is None:
        return
    merged = dict(kwargs or {})
    if documents is not None:
        merged.setdefault("documents", documents)
    if reasoning_effort is not None:
        merged.setdefault("reasoning_effort", reasoning_effort)
        merged.setdefault("enable_thinking", reasoning_effort != "none")
    payload["chat_template_kwargs"] = merged
