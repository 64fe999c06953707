"""A whitespace-word "tokenizer": the smallest useful third-party backend. Imports only the core contract."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec, ChatRequest, TokenCount, TokenizerBackend, TokenizerConfig
from baton_engine.tokens.hookspecs import hookimpl


class WordsBackend(TokenizerBackend):
    @property
    def source(self) -> str:
        return "words"

    def count_chat(self, request: ChatRequest) -> TokenCount:
        texts = [str(message.get("content") or "") for message in request["messages"]]
        texts += [tool["function"]["name"] for tool in request.get("tools") or ()]
        return TokenCount(sum(len(text.split()) for text in texts), True, self.source)

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(len(text.split()), True, self.source)


def _build(config: TokenizerConfig) -> WordsBackend:
    return WordsBackend()


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    return [BackendSpec("words", factory=_build, description="whitespace-separated words")]
