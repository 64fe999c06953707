"""The built-in ``rough`` backend: Hermes' own chars/4 estimate, always available, never exact.

The arithmetic mirrors ``agent/model_metadata.py`` of hermes-agent 0.19.0 (``estimate_tokens_rough``,
``estimate_messages_tokens_rough``, ``estimate_request_tokens_rough``) so that a Baton fallback never
disagrees with the number Hermes itself would have used, with one exception: an image or a document costs
what ``tokens.media`` says (the one definition, read from its size; Hermes: a flat 1,500 an image, a
document's base64 as text). Hermes is not imported: the core must work without it, and the hermes-marked
tests compare both implementations on the same inputs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.tokens.contract import (
    BackendSpec,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)
from baton_engine.tokens.hookspecs import hookimpl
from baton_engine.tokens.media import part_tokens, split_request

ROUGH_SOURCE = "rough"
FALLBACK_SOURCE = f"{ROUGH_SOURCE}+margin"  # a rough count plus the fallback margin (the counter's fallback)


# The rough estimate's margin, from its measured error against the Qwen3 tokenizer on real text
# (benchmarks/tokens/estimator_bench.py; figures in benchmarks/FINDINGS.md, "Figures behind the code's constants",
# rough margin): chars/4 counts a digit or a non-ASCII character (CJK, accents, emoji) at a quarter of a token
# where tokenizers spend up to one or more, and the rest of the text within a share. With a token for each such
# character plus 40% of the estimate, no kind of text undercounts as a whole (numbers +0.7%, code +48%, prose +46%,
# identifiers +24%, CJK +70%); 20% and 30% left numbers 4% and 2% short.
ROUGH_MARGIN_SHARE = 0.4
_DIGITS = str.maketrans("", "", "0123456789")


def dense_characters(text: str) -> int:
    """Digits and non-ASCII characters of ``text``: the ones chars/4 counts at a quarter of a token."""
    return len(text) - len(text.translate(_DIGITS)) + len(text) - len(text.encode("ascii", "ignore"))


def estimate_margin(estimate: int, margin: int, dense: int = 0) -> int:
    """The safety margin a rough estimate of ``estimate`` tokens carries, ``dense`` digits and non-ASCII characters
    among what it read: ``ROUGH_MARGIN_SHARE`` of it plus a token per dense character, at least ``margin`` (the
    configured fallback margin); none when nothing was estimated (an empty request has nothing to under-count)."""
    if estimate <= 0:
        return 0
    return max(margin, math.ceil(ROUGH_MARGIN_SHARE * estimate) + dense)


def request_margin(request: ChatRequest, estimate: int, margin: int) -> int:
    """``estimate_margin`` of a chat request (its messages and tool schemas, media parts left out: they are costed
    by ``tokens.media``)."""
    if estimate <= 0:
        return 0
    try:
        text_request, _ = split_request(request)
        text = json.dumps([text_request.get("messages"), text_request.get("tools")], ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # not JSON: the share alone
        return estimate_margin(estimate, margin)
    return estimate_margin(estimate, margin, dense_characters(text))


def estimate_tokens_rough(text: str) -> int:
    """ceil(chars / 4); 0 for empty text."""
    if not text:
        return 0
    return (len(text) + 3) // 4


def _media_tokens(parts: Any) -> int:
    if not isinstance(parts, list):
        return 0
    return sum(tokens for part in parts if (tokens := part_tokens(part)) is not None)


def _count_image_tokens(msg: Any) -> int:
    """The media parts Hermes looks for (content, its stashed Anthropic blocks, its ``_multimodal`` wrapper)."""
    if not isinstance(msg, dict):
        return 0
    content = msg.get("content")
    count = _media_tokens(content) + _media_tokens(msg.get("_anthropic_content_blocks"))
    if isinstance(content, dict) and content.get("_multimodal"):
        count += _media_tokens(content.get("content"))
    return count


def _message_chars(msg: Any) -> int:
    """len(str(...)) of the message with media payloads stripped, as Hermes measures it (Hermes strips images)."""
    if not isinstance(msg, dict):
        return len(str(msg))
    shadow: dict[str, Any] = {}
    for key, value in msg.items():
        if key == "_anthropic_content_blocks":
            continue
        if key == "content" and isinstance(value, list):
            shadow[key] = [
                {"type": part.get("type"), "image": "[stripped]"} if part_tokens(part) is not None else part
                for part in value
            ]
        elif key == "content" and isinstance(value, dict) and value.get("_multimodal"):
            shadow[key] = value.get("text_summary", "")
        else:
            shadow[key] = value
    return len(str(shadow))


def estimate_messages_tokens_rough(messages: Sequence[Any]) -> int:
    total_chars = sum(_message_chars(msg) for msg in messages)
    image_tokens = sum(_count_image_tokens(msg) for msg in messages)
    return ((total_chars + 3) // 4) + image_tokens


def estimate_tools_tokens_rough(tools: Sequence[Any]) -> int:
    """Name + description + compact JSON of parameters, chars/4 (Hermes' tool-schema estimate)."""
    total_chars = 0
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function")
        spec = fn if isinstance(fn, dict) else tool
        name = spec.get("name") or ""
        desc = spec.get("description") or ""
        params = spec.get("parameters") or {}
        if isinstance(name, str):
            total_chars += len(name)
        if isinstance(desc, str):
            total_chars += len(desc)
        try:
            total_chars += len(json.dumps(params, ensure_ascii=False, separators=(",", ":")))
        except (TypeError, ValueError):  # not JSON, or circular: Hermes falls back to str() for such schemas
            total_chars += len(str(params))
    return (total_chars + 3) // 4


def estimate_request_tokens_rough(
    messages: Sequence[Any], *, system_prompt: str = "", tools: Sequence[Any] | None = None
) -> int:
    """Same signature and result as Hermes' ``estimate_request_tokens_rough``."""
    total = 0
    if system_prompt:
        total += (len(system_prompt) + 3) // 4
    if messages:
        total += estimate_messages_tokens_rough(messages)
    if tools:
        total += estimate_tools_tokens_rough(tools)
    return total


def estimate_chat_request(request: ChatRequest) -> int:
    """Rough count of a chat request (messages + tools); raises TypeError on a request without a message list."""
    if not isinstance(request, Mapping):
        raise TypeError("chat request must be a mapping")
    messages = request.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TypeError("chat request needs a 'messages' list")
    tools = request.get("tools")
    if tools is not None and (not isinstance(tools, Sequence) or isinstance(tools, (str, bytes))):
        raise TypeError("'tools' must be a list")
    return estimate_request_tokens_rough(messages, tools=tools or None)


class RoughBackend(TokenizerBackend):
    """Never exact; the counter adds the fallback margin where a budget depends on it."""

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> RoughBackend:
        return cls()

    @property
    def source(self) -> str:
        return ROUGH_SOURCE

    def count_chat(self, request: ChatRequest) -> TokenCount:
        try:
            tokens = estimate_chat_request(request)
        except TypeError as exc:  # the contract's failure type; the message names fields, never content
            raise RequestNotCountable(str(exc)) from None  # this request only: the breaker stays closed
        return TokenCount(tokens=tokens, exact=False, source=ROUGH_SOURCE)

    def count_text(self, text: str) -> TokenCount:
        if not isinstance(text, str):
            raise RequestNotCountable("text must be a str")
        return TokenCount(tokens=estimate_tokens_rough(text), exact=False, source=ROUGH_SOURCE)


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    """Registered through the same hook as every other backend (see ``tokens.plugins``)."""
    return [
        BackendSpec(
            ROUGH_SOURCE,
            factory=RoughBackend.from_config,
            description="Hermes-compatible chars/4 estimate; always available, never exact",
        )
    ]
