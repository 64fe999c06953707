"""Backend facts are in the contract: a third-party backend reports the margin already in its count
(``TokenCount.margin_tokens``) and that it is a server (``TokenizerBackend.remote``), and both are honoured
without any name or source-string guessing."""

from __future__ import annotations

from typing import Any

import pytest

from baton_engine.agent.runtime import BatonRuntime, CounterStart
from baton_engine.budget import margin_for
from baton_engine.settings import load_settings
from baton_engine.tokens.contract import TokenCount, TokenizerBackend
from baton_engine.tokens.counter import TokenCounter


class ThirdPartyServer(TokenizerBackend):
    """Neither a first-party name nor a source string the core knows."""

    def __init__(self, remote: bool) -> None:
        self.remote = remote

    @property
    def source(self) -> str:
        return "acme-tok:serving"

    def count_chat(self, request: Any) -> TokenCount:
        return TokenCount(1000, False, "acme-estimate", max_model_len=8192, margin_tokens=200)

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(len(text), True, "acme-tok:serving")


REQUEST = {"messages": [{"role": "user", "content": "hello"}]}


def test_the_margin_a_third_party_count_includes_is_not_added_again() -> None:
    counted = TokenCounter(ThirdPartyServer(remote=False), fallback_margin_tokens=1024).count_chat(REQUEST)
    assert counted.margin_tokens == 200 and counted.source == "acme-estimate"
    assert margin_for(counted, 1024) == 0
    assert margin_for(TokenCount(1000, False, "acme-estimate"), 1024) == 1024


@pytest.mark.parametrize(("remote", "window"), [(True, 8192), (False, None)])
def test_the_server_window_is_read_only_from_a_backend_that_says_it_is_remote(remote: bool,
                                                                               window: int | None) -> None:
    runtime = BatonRuntime(load_settings(env={}))
    runtime._starts[runtime.settings.tokenizer] = CounterStart.built(
        TokenCounter(ThirdPartyServer(remote=remote), fallback_margin_tokens=1024))
    runtime.count_chat(REQUEST)
    assert runtime.main.remote_tokenizer() is remote
    assert runtime.main.server_window() == window
