"""Runs in the tox env ``hermes``: baton-engine and hermes-agent==0.19.0 installed together."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from baton_engine.settings import load_settings
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend

pytestmark = pytest.mark.hermes


def test_hermes_and_baton_import_together_and_settings_load() -> None:
    model_metadata = pytest.importorskip("agent.model_metadata")
    pytest.importorskip("agent.context_engine")
    assert version("hermes-agent") == "0.19.0"
    settings = load_settings({"INCONTEXT_MIN_OUTPUT_TOKENS": "2048", "BATON_TOKENIZER_MODEL": "qwen3"},
                             hermes_block={"brief_max_tokens": 800})
    assert settings.min_output_tokens == 2048 and settings.brief_max_tokens == 800
    backend, selection = build_backend(settings.tokenizer)
    request = {"messages": [{"role": "user", "content": "hello from hermes"}]}
    count = TokenCounter(backend, fallback_margin_tokens=0).count_chat(request)
    if selection.name == "rough":
        assert count.tokens == model_metadata.estimate_request_tokens_rough(request["messages"])
    assert count.known
