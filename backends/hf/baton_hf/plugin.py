"""Registers the ``hf`` tokenizer backend (entry point ``baton_engine.tokenizers: hf``)."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec, TokenizerBackend, TokenizerConfig
from baton_engine.tokens.hookspecs import hookimpl


def _create(config: TokenizerConfig) -> TokenizerBackend:
    from baton_hf.backend import HfBackend  # transformers is imported only when this backend is chosen

    return HfBackend.from_config(config)


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            "hf",
            _create,
            description="exact counts from a local Hugging Face tokenizer and its chat template (offline)",
        )
    ]
