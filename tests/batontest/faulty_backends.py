"""A real tokenizer backend that fails part-way: the counting tests and the anchor benchmark lose it mid-session."""

from __future__ import annotations

from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend


class LostTokenizer(TokenizerBackend):
    """``inner`` until ``calls`` chat counts have been made, then ``CannotCount`` (the tokenizer lost);
    ``left`` goes below zero by one for each failed call."""

    def __init__(self, inner: TokenizerBackend, calls: int) -> None:
        self.inner, self.left = inner, calls

    @property
    def source(self) -> str:
        return self.inner.source

    def count_chat(self, request: ChatRequest) -> TokenCount:
        self.left -= 1
        if self.left < 0:
            raise CannotCount("tokenizer lost")
        return self.inner.count_chat(request)

    def count_text(self, text: str) -> TokenCount:
        return self.inner.count_text(text)


class GarbageTokenizer(TokenizerBackend):
    """Answers every count with ``answer`` (not a usable TokenCount); ``calls`` counts the times it was asked."""

    def __init__(self, answer: object) -> None:
        self.answer, self.calls = answer, 0

    @property
    def source(self) -> str:
        return "garbage"

    def count_chat(self, request: ChatRequest) -> TokenCount:
        self.calls += 1
        return self.answer  # type: ignore[return-value]

    def count_text(self, text: str) -> TokenCount:
        self.calls += 1
        return self.answer  # type: ignore[return-value]
