"""What a provider's context-overflow refusal proves: its real window, the real prompt size, the output asked.

Why: a server that refuses a request states numbers Baton cannot know otherwise — the window it really
serves (``--max-model-len``, ``n_ctx``, a gateway's lower limit) and, often, its own count of the prompt.
Learning them makes the next request fit, so the same refused request is never sent twice.

Pure: no Hermes, no I/O. ``parse_refusal`` reads a str, an exception (its str, ``.message``, ``.body`` —
the OpenAI SDK's ``BadRequestError`` carries the decoded error object there — and ``.response``'s text) or
an error JSON body, and returns numbers only: a ``Refusal`` never holds message text. Anything that is not a
context overflow (rate limits, auth, a 400 about tool pairing, a max-output-tokens cap of the model) is None.

Message families, each with the real server text (sources in ``tests/refusal/test_parse_refusal.py``), most
specific first; the first family that matches wins. Some providers state no numbers (Bedrock's "Input is too long
for requested model", the Responses API's ``context_length_exceeded``, Ollama): such a refusal teaches no window,
and the route keeps the one it had (Hermes' context length, the model's documented window).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROMPT_TOO_LONG = "prompt_too_long"        # the prompt alone exceeds the window
PROMPT_PLUS_OUTPUT = "prompt_plus_output"  # prompt + requested output exceed the window
OUTPUT_TOO_LARGE = "output_too_large"      # the output cap alone exceeds the window / max_model_len

LLAMACPP_ERROR_TYPE = "exceed_context_size_error"
_MAX_DEPTH = 6        # nesting of error bodies (OpenRouter metadata.raw, Cloudflare errors[]) worth reading
_MAX_TEXT = 65_536    # longer error texts are cut before matching: a refusal states its numbers early


@dataclass(frozen=True)
class Refusal:
    """Numbers a context-overflow refusal states; None where the server did not state one.

    ``prompt_exact`` is False when the server only bounds the prompt ("at least N input tokens": vLLM stops
    tokenising one token past what could fit, so N is its cut-off, not the prompt's size).
    """

    kind: str
    window: int | None
    prompt_tokens: int | None
    requested_output: int | None
    server: str
    prompt_exact: bool = True


@dataclass(frozen=True)
class _Family:
    server: str
    kind: str
    pattern: re.Pattern[str]


_N = r"\d[\d,]*(?:\.0+)?"  # a count as servers print it: 131072, 131,072, or SGLang's float 524288.0


def _family(server: str, kind: str, pattern: str) -> _Family:
    return _Family(server, kind, re.compile(pattern.replace("{N}", _N), re.IGNORECASE))


# Group names: window, prompt, output, atleast (present when the prompt is only a lower bound).
_FAMILIES: tuple[_Family, ...] = (
    # vLLM 0.32: the prompt alone does not fit.
    _family("vllm", PROMPT_TOO_LONG,
            r"maximum context length is (?P<window>{N}) tokens\. However, your prompt contains "
            r"(?P<atleast>at least )?(?P<prompt>{N}) input tokens, which exceeds this limit"),
    # vLLM 0.20-0.25 (renderers/params.py): prompt + max_tokens; the prompt in tokens or in characters.
    _family("vllm", PROMPT_PLUS_OUTPUT,
            r"maximum context length is (?P<window>{N}) tokens\. However, you requested (?P<output>{N}) output "
            r"tokens and your prompt contains (?:(?P<atleast>at least )?(?P<prompt>{N}) input tokens|{N} characters)"),
    # vLLM 0.6-0.10 (serving_engine.py _validate_input): max_tokens does not fit beside the prompt.
    _family("vllm", PROMPT_PLUS_OUTPUT,
            r"'max_tokens' or 'max_completion_tokens' is too large: (?P<output>{N})\. This model's maximum context "
            r"length is (?P<window>{N}) tokens and your request has (?P<prompt>{N}) input tokens"),
    # vLLM renderers/params.py _token_len_check: the measured prompt and the output asked.
    _family("vllm", PROMPT_PLUS_OUTPUT,
            r"You passed (?P<prompt>{N}) input tokens and requested (?P<output>{N}) output tokens\. However, the "
            r"model's context length is only (?P<window>{N}) tokens"),
    # vLLM renderers/params.py _text_len_check: refused on characters, before tokenising.
    _family("vllm", PROMPT_PLUS_OUTPUT,
            r"You passed {N} input characters and requested (?P<output>{N}) output tokens\. However, the model's "
            r"context length is only (?P<window>{N}) tokens"),
    # vLLM v1 engine (processor / input_processor): the decoder prompt does not leave room for one token.
    _family("vllm", PROMPT_TOO_LONG,
            r"The decoder prompt \(length (?P<prompt>{N})\) (?:plus the number of requested output tokens "
            r"\(at least 1\) )?is longer than the maximum model length of (?P<window>{N})"),
    # vLLM: max_tokens above max_model_len (0.32 wording; the renderer's "max_model_len=max_total_tokens=N").
    _family("vllm", OUTPUT_TOO_LARGE,
            r"(?P<param>max_tokens|max_completion_tokens|max_output_tokens)=(?P<output>{N}) ?cannot be greater than "
            r"(?:max_model_len|max_total_tokens)=(?:(?:max_model_len|max_total_tokens)=)?(?P<window>{N})"),
    # OpenAI (and older vLLM): the total, split into messages and completion.
    _family("openai", PROMPT_PLUS_OUTPUT,
            r"maximum context length is (?P<window>{N}) tokens\. However, you requested {N} tokens "
            r"\((?P<prompt>{N}) in the messages, (?P<output>{N}) in the completion\)"),
    # OpenRouter: the same, split into text input (and tool input) and output.
    _family("openrouter", PROMPT_PLUS_OUTPUT,
            r"maximum context length is (?P<window>{N}) tokens\. However, you requested about {N} tokens "
            r"\((?P<prompt>{N}) of text input, (?:(?P<tools>{N}) of tool input, )?(?P<output>{N}) in the output\)"),
    # OpenAI: the messages alone.
    _family("openai", PROMPT_TOO_LONG,
            r"maximum context length is (?P<window>{N}) tokens\. However, your messages resulted in "
            r"(?P<prompt>{N}) tokens"),
    # OpenAI Responses API: the model's input limit (smaller than its context window).
    _family("openai", PROMPT_TOO_LONG,
            r"Input tokens exceed the configured limit of (?P<window>{N}) tokens\. Your messages resulted in "
            r"(?P<prompt>{N}) tokens"),
    # SGLang (tokenizer_manager.py _validate_token_len): prompt + max_new_tokens.
    _family("sglang", PROMPT_PLUS_OUTPUT,
            r"Requested token count exceeds the model's maximum context length of (?P<window>{N}) tokens\. You "
            r"requested a total of {N} tokens: (?P<prompt>{N}) tokens from the input messages and (?P<output>{N}) "
            r"tokens for the completion"),
    # SGLang (tokenizer_manager.py) and Together: the prompt alone.
    _family("sglang", PROMPT_TOO_LONG,
            r"The input \((?P<prompt>{N}) tokens\) is longer than the model's context length \((?P<window>{N}) tokens\)"),
    # SGLang scheduler: the prompt against the longest input it admits.
    _family("sglang", PROMPT_TOO_LONG,
            r"Input length \((?P<prompt>{N}) tokens\) exceeds the maximum allowed length \((?P<window>{N}) tokens\)"),
    # Anthropic: the prompt alone.
    _family("anthropic", PROMPT_TOO_LONG,
            r"prompt is too long: (?P<prompt>{N}) tokens > (?P<window>{N}) maximum"),
    # Anthropic: input + max_tokens.
    _family("anthropic", PROMPT_PLUS_OUTPUT,
            r"input length and `?max_tokens`? exceed context limit: (?P<prompt>{N}) \+ (?P<output>{N}) > "
            r"(?P<window>{N})"),
    # Anthropic (as quoted by Hermes' parse_available_output_tokens_from_error).
    _family("anthropic", PROMPT_PLUS_OUTPUT,
            r"max_tokens: (?P<output>{N}) > context_window: (?P<window>{N}) - input_tokens: (?P<prompt>{N})"),
    # llama.cpp server: the prompt against the slot's n_ctx (newer and older wordings).
    _family("llama.cpp", PROMPT_TOO_LONG,
            r"request \((?P<prompt>{N}) tokens\) exceeds (?:the available )?context size \((?P<window>{N}) tokens\)"),
    _family("llama.cpp", PROMPT_TOO_LONG,
            r"input \((?P<prompt>{N}) tokens\) is larger than the max context size \((?P<window>{N}) tokens\)"),
    # llama.cpp without numbers in the text (they travel as n_prompt_tokens / n_ctx fields, read separately).
    _family("llama.cpp", PROMPT_TOO_LONG, r"the request exceeds the available context size"),
    # Gemini, native (generateContent) and OpenAI-compatible (/v1beta/openai: the same error object in a list).
    _family("gemini", PROMPT_TOO_LONG,
            r"input token count \((?P<prompt>{N})\) exceeds the maximum number of tokens allowed \((?P<window>{N})\)"),
    # Mistral La Plateforme (and Mistral models on Bedrock): the prompt, with or without the draft tokens.
    _family("mistral", PROMPT_TOO_LONG,
            r"Prompt contains (?P<prompt>{N}) tokens(?: and {N} draft tokens)?, too large for model with "
            r"(?P<window>{N}) maximum context length"),
    # Bedrock (InvokeModel, Converse): a ValidationException without numbers.
    _family("bedrock", PROMPT_TOO_LONG, r"Input is too long for requested model"),
    # OpenAI Responses API (``context_length_exceeded``, param ``input``): no numbers.
    _family("openai", PROMPT_TOO_LONG, r"Your input exceeds the context window of this model"),
    # Ollama (llm/server.go): no numbers.
    _family("ollama", PROMPT_TOO_LONG, r"input length exceeds (?:the )?context length"),
    # Any other server that states its window this way: the general condition, prompt + output > window.
    _family("generic", PROMPT_PLUS_OUTPUT, r"(?:model's|endpoint's) maximum context length is (?P<window>{N}) tokens"),
)

_FIELD = r"[\"']{name}[\"']\s*:\s*(\d+)"  # a JSON or Python-repr field inside a text: "n_ctx": 4096 / 'n_ctx': 4096


def parse_refusal(error: Any) -> Refusal | None:
    """The ``Refusal`` an error states, or None when it is not a context overflow (or unreadable)."""
    texts, bodies = _gather(error)
    fields = _llamacpp_fields(texts, bodies)
    for family in _FAMILIES:
        for text in texts:
            match = family.pattern.search(text)
            if match is not None:
                return _refusal(family, match, fields)
    if fields is not None:  # llama.cpp's error type with its fields, whatever the message says
        return _build(PROMPT_TOO_LONG, "llama.cpp", window=fields[1], prompt=fields[0], output=None)
    return None


def _refusal(family: _Family, match: re.Match[str], fields: tuple[int | None, int | None] | None) -> Refusal:
    groups = match.groupdict()
    window, prompt, output = _int(groups.get("window")), _int(groups.get("prompt")), _int(groups.get("output"))
    tools = _int(groups.get("tools"))
    if prompt is not None and tools is not None:
        prompt += tools  # OpenRouter splits the prompt into text and tool input
    if fields is not None:  # llama.cpp's fields are the server's own numbers
        prompt = fields[0] if fields[0] is not None else prompt
        window = fields[1] if fields[1] is not None else window
    return _build(family.kind, family.server, window=window, prompt=prompt, output=output,
                  exact=groups.get("atleast") is None)


def _build(kind: str, server: str, *, window: int | None, prompt: int | None, output: int | None,
           exact: bool = True) -> Refusal:
    if kind == PROMPT_PLUS_OUTPUT and prompt is not None and window is not None and prompt > window:
        kind = PROMPT_TOO_LONG  # the prompt alone did not fit (a lower bound above the window proves it too)
    return Refusal(kind=kind, window=window, prompt_tokens=prompt, requested_output=output, server=server,
                   prompt_exact=exact if prompt is not None else True)


def _int(text: str | None) -> int | None:
    if not text:
        return None
    value = int(text.replace(",", "").split(".")[0])
    return value if value > 0 else None


def _gather(error: Any) -> tuple[list[str], list[Mapping[str, Any]]]:
    """Every text and JSON body an error carries, nested bodies included (OpenRouter's ``metadata.raw``)."""
    texts: list[str] = []
    bodies: list[Mapping[str, Any]] = []

    def add(value: Any, depth: int) -> None:
        if depth > _MAX_DEPTH or value is None:
            return
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value[:_MAX_TEXT]).decode("utf-8", "replace")
        if isinstance(value, str):
            text = value[:_MAX_TEXT]
            if text and text not in texts:
                texts.append(text)
                decoded = _json(text)
                if decoded is not None:
                    add(decoded, depth + 1)
            return
        if isinstance(value, Mapping):
            bodies.append(value)
            for item in value.values():
                if isinstance(item, (str, Mapping, list, tuple)):
                    add(item, depth + 1)
            return
        if isinstance(value, (list, tuple)):
            for item in value[:16]:
                add(item, depth + 1)
            return
        if isinstance(value, BaseException):
            add(_safe(lambda: str(value)), depth + 1)
            for name in ("message", "body"):
                add(_safe(lambda: getattr(value, name, None)), depth + 1)
            response = _safe(lambda: getattr(value, "response", None))
            if response is not None and not isinstance(response, (str, Mapping)):
                add(_safe(lambda: getattr(response, "text", None)), depth + 1)
            else:
                add(response, depth + 1)

    add(error, 0)
    return texts, bodies


def _safe(read: Any) -> Any:
    """One attribute read of a foreign exception; a property that raises is no text."""
    try:
        return read()
    except Exception:  # noqa: BLE001 - a foreign object's property: unreadable is simply absent
        return None


def _json(text: str) -> Any:
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


def _llamacpp_fields(texts: list[str], bodies: list[Mapping[str, Any]]) -> tuple[int | None, int | None] | None:
    """``(n_prompt_tokens, n_ctx)`` of a llama.cpp ``exceed_context_size_error``, from its body or its text."""
    for body in bodies:
        if body.get("type") == LLAMACPP_ERROR_TYPE:
            return _field_int(body.get("n_prompt_tokens")), _field_int(body.get("n_ctx"))
    for text in texts:
        if LLAMACPP_ERROR_TYPE in text:
            return _text_field(text, "n_prompt_tokens"), _text_field(text, "n_ctx")
    return None


def _field_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text_field(text: str, name: str) -> int | None:
    match = re.search(_FIELD.format(name=name), text)
    return _int(match.group(1)) if match else None

