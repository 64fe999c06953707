"""Turn a provider chat request into llama-server request bodies (pure; never mutates its input).

/apply-template parses its body with the same function as /v1/chat/completions (``oaicompat_chat_params_parse``
in tools/server/server-common.cpp), so it gets the fields of the chat request that reach the template, as the
OpenAI client would send them (``extra_body`` merged over the top level). /tokenize then tokenizes the rendered
prompt with special tokens added and parsed, as the chat path does (``tokenize_input_prompts(..., true, true)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baton_engine.tokens.contract import ChatRequest, RequestNotCountable, copy_json

# The body fields oaicompat_chat_params_parse reads before it renders: every other field leaves the prompt alone.
_RENDER_FIELDS = (
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "add_generation_prompt",
    "continue_final_message",
    "reasoning_format",
    "chat_template_kwargs",
    "reasoning_effort",
    "response_format",
    "json_schema",
    "grammar",
)


def template_payload(request: ChatRequest, model: str | None) -> dict[str, Any]:
    """The /apply-template body, or RequestNotCountable for a request the server could not parse either."""
    if not isinstance(request, Mapping):
        raise RequestNotCountable(f"chat request must be a mapping, got {type(request).__name__}")
    extra = request.get("extra_body")
    merged = {**request, **extra} if isinstance(extra, Mapping) else dict(request)
    if not isinstance(merged.get("messages"), (list, tuple)):
        raise RequestNotCountable("chat request has no messages list")
    payload = {name: merged[name] for name in _RENDER_FIELDS if name in merged}
    chosen_model = model or merged.get("model")
    if chosen_model:
        payload["model"] = chosen_model  # a router-mode llama-server picks the model's instance by it
    return copy_json(payload)


def tokenize_payload(prompt: str, model: str | None, *, special: bool) -> dict[str, Any]:
    """The /tokenize body: ``special`` adds BOS/EOS as the model's vocabulary asks (a chat prompt); special-token
    texts are parsed as special tokens either way, as the server does for a prompt."""
    if not isinstance(prompt, str):
        raise RequestNotCountable(f"text must be a str, got {type(prompt).__name__}")
    payload: dict[str, Any] = {"content": prompt, "add_special": special, "parse_special": True}
    if model:
        payload["model"] = model
    return payload
