"""Registers the ``tiktoken`` tokenizer backend (entry point ``baton_engine.tokenizers: tiktoken``)."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec, TokenizerBackend, TokenizerConfig
from baton_engine.tokens.hookspecs import hookimpl


def _create(config: TokenizerConfig) -> TokenizerBackend:
    from baton_tiktoken.backend import TiktokenBackend  # tiktoken is imported only when this backend is chosen

    return TiktokenBackend.from_config(config)


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            "tiktoken",
            _create,
            description="OpenAI-family tokens (o200k_base/cl100k_base), text-exact, offline vocabularies",
        )
    ]
