"""A whitespace-word "tokenizer": the smallest useful third-party backend. Imports only the core contract.

It passes Baton's conformance kit (``baton tokens check words``): it raises CannotCount, naming the field but
never quoting it, for requests it cannot count.
"""

from __future__ import annotations

from collections.abc import Mapping

from baton_engine.tokens.contract import (
    BackendSpec,
    CannotCount,
    ChatRequest,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)
from baton_engine.tokens.hookspecs import hookimpl


class WordsBackend(TokenizerBackend):
    @property
    def source(self) -> str:
        return "words"

    def count_chat(self, request: ChatRequest) -> TokenCount:
        messages = request.get("messages")
        if not isinstance(messages, list):
            raise CannotCount("request.messages must be a list")
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
                raise CannotCount(f"messages[{index}] must be an object with a string 'role'")
        texts = [str(message.get("content") or "") for message in messages]
        texts += [tool["function"]["name"] for tool in request.get("tools") or ()]
        return TokenCount(sum(len(text.split()) for text in texts), True, self.source)

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(len(text.split()), True, self.source)


def _build(config: TokenizerConfig) -> WordsBackend:
    return WordsBackend()


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    return [BackendSpec("words", factory=_build, description="whitespace-separated words")]
