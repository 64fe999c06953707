"""Registers the llamacpp backend through the entry-point hook any third-party plugin uses."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec
from baton_engine.tokens.hookspecs import hookimpl

from .backend import LlamaCppBackend
from .detect import detect_llamacpp, llamacpp_window


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    description = "exact counts from a llama.cpp llama-server (/apply-template + /tokenize, per-slot window)"
    return [BackendSpec("llamacpp", LlamaCppBackend.from_config, description, detect=detect_llamacpp,
                        window=llamacpp_window)]
