"""Registers the vllm backend through the same entry-point hook a third-party plugin would use."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec
from baton_engine.tokens.hookspecs import hookimpl

from .backend import VllmBackend
from .detect import detect_vllm, vllm_window


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    description = "exact counts from a vLLM server's /tokenize (chat template included)"
    return [BackendSpec("vllm", VllmBackend.from_config, description, detect=detect_vllm,
                        window=vllm_window)]
