"""OpenAI-family token counts with tiktoken, offline.

Plain text is counted exactly (``encode_ordinary``: special-token strings in user text are
ordinary text, as the API treats them). OpenAI does not publish how its hosted chat models
frame messages and tools, so ``count_chat`` is text-exact plus a fixed, documented framing
overhead (OpenAI cookbook's per-message figures) and reports ``exact=False``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend, TokenizerConfig

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
            raise CannotCount("request.messages must be a list of message objects")
        total = sum(self._message_tokens(m, i) for i, m in enumerate(messages))
        total += self._tools_tokens(request.get("tools"))
        if request.get("add_generation_prompt", True):
            total += REPLY_PRIMING_TOKENS
        return TokenCount(total, exact=False, source=self.source, max_model_len=self._max_model_len)

    def _message_tokens(self, message: Any, index: int) -> int:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise CannotCount(f"messages[{index}] must be an object with a string 'role'")
        tokens = TOKENS_PER_MESSAGE + len(self._encode(message["role"])) + len(self._encode(_text_of(message.get("content"))))
        if isinstance(message.get("name"), str):
            tokens += TOKENS_PER_NAME + len(self._encode(message["name"]))
        for call in message.get("tool_calls") or ():
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            arguments = function.get("arguments") or ""
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            tokens += TOKENS_PER_TOOL_CALL + len(self._encode(str(function.get("name", "")))) + len(self._encode(arguments))
        return tokens

    def _tools_tokens(self, tools: Any) -> int:
        if not tools:
            return 0
        tokens = TOOLS_BLOCK_TOKENS
        for tool in tools:
            function = tool.get("function", {}) if isinstance(tool, Mapping) else {}
            schema = json.dumps(function.get("parameters") or {}, ensure_ascii=False, sort_keys=True)
            tokens += TOKENS_PER_TOOL + len(self._encode(f"{function.get('name', '')}\n{function.get('description') or ''}\n{schema}"))
        return tokens


def _text_of(content: Any) -> str:
    """String content as-is; the text of text parts joined with newlines; nothing else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""
