"""OpenAI-family token counts with tiktoken, offline.

Plain text is counted exactly (``encode_ordinary``: special-token strings in user text are
ordinary text, as the API treats them). OpenAI does not publish how its hosted chat models
frame messages and tools, so ``count_chat`` is text-exact plus a fixed, documented framing
overhead (OpenAI cookbook's per-message figures) and reports ``exact=False``.

A chat count is a sum of separately encoded texts (roles, contents, names, tool calls, tool schemas) plus
fixed overheads, so each text's count is cached (``PieceCounter`` keyed by the text): a conversation that
grew by one message encodes only the new message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.tokens.contract import ChatRequest, RequestNotCountable, TokenCount, TokenizerBackend, TokenizerConfig
from baton_engine.tokens.pieces import PieceCounter

from baton_tiktoken.encodings import encoding_for_model, load_encoding

# Framing estimates (see README): <|start|>{role}<|message|>{content}<|end|> per message.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3  # <|start|>assistant<|message|>
TOKENS_PER_TOOL_CALL = 3
TOKENS_PER_TOOL = 8
TOOLS_BLOCK_TOKENS = 12


class TiktokenBackend(TokenizerBackend):
    """Counts with one ``tiktoken.Encoding`` (thread-safe in tiktoken itself)."""

    def __init__(self, encoding: Any, *, context_length: int | None = None) -> None:
        self._encoding = encoding
        self._encode = encoding.encode_ordinary
        self._max_model_len = context_length
        self._texts = PieceCounter(self._count_batch, ())  # no split tokens: one cache entry per whole text

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> TiktokenBackend:
        name = encoding_for_model(config.model)
        return cls(load_encoding(name, config.path), context_length=config.context_length)

    @property
    def source(self) -> str:
        return f"tiktoken:{self._encoding.name}"

    @property
    def max_model_len(self) -> int | None:
        return self._max_model_len

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(len(self._encode(text)), exact=True, source=self.source, max_model_len=self._max_model_len)

    def count_chat(self, request: ChatRequest) -> TokenCount:
        messages = request.get("messages")
        if not isinstance(messages, list):
            raise RequestNotCountable("request.messages must be a list of message objects")
        texts: list[str] = []
        total = sum(_message_framing(m, i, texts) for i, m in enumerate(messages))
        total += _tools_framing(request.get("tools"), texts)
        if request.get("add_generation_prompt", True):
            total += REPLY_PRIMING_TOKENS
        total += self._texts.count_all(texts)
        return TokenCount(total, exact=False, source=self.source, max_model_len=self._max_model_len)

    def clear_cache(self) -> None:
        self._texts.clear()

    def _count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(self._encode(text)) for text in texts]


def _message_framing(message: Any, index: int, texts: list[str]) -> int:
    """Append the message's encoded texts to ``texts``; return its fixed framing tokens."""
    is_mapping = type(message) is dict or isinstance(message, Mapping)  # dict first: the ABC check is slow
    if not is_mapping or not isinstance(message.get("role"), str):
        raise RequestNotCountable(f"messages[{index}] must be an object with a string 'role'")
    texts += (message["role"], _text_of(message.get("content")))
    tokens = TOKENS_PER_MESSAGE
    if isinstance(message.get("name"), str):
        tokens += TOKENS_PER_NAME
        texts.append(message["name"])
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        tokens += TOKENS_PER_TOOL_CALL
        texts += (str(function.get("name", "")), arguments)
    return tokens


def _tools_framing(tools: Any, texts: list[str]) -> int:
    """Append one text per tool schema to ``texts``; return the tools block's fixed framing tokens."""
    if not tools:
        return 0
    tokens = TOOLS_BLOCK_TOKENS
    for tool in tools:
        function = tool.get("function", {}) if isinstance(tool, Mapping) else {}
        schema = json.dumps(function.get("parameters") or {}, ensure_ascii=False, sort_keys=True)
        tokens += TOKENS_PER_TOOL
        texts.append(f"{function.get('name', '')}\n{function.get('description') or ''}\n{schema}")
    return tokens


def _text_of(content: Any) -> str:
    """String content as-is; the text of text parts joined with newlines; nothing else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""
