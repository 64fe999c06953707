"""`tokenizer_check`: the configured tokenizer built and asked to count one request, with a verdict the
user can act on (doctor, status, the plugin's start-up line and `baton tokens` all say this)."""

from __future__ import annotations

import pytest
from batontest import assets

from baton_engine.settings import load_settings
from baton_engine.tokenizer_check import check_tokenizer
from baton_engine.tokens.plugins import build_backend
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.counter import TokenCounter


def test_a_missing_hf_path_fails_naming_the_setting_and_the_full_path(tmp_path) -> None:
    pytest.importorskip("baton_hf")
    missing = tmp_path / "models" / "qwen3"
    settings = load_settings({}, hermes_block={"tokenizer": {"backend": "hf", "path": str(missing)}})
    verdict = check_tokenizer(settings)
    assert verdict.verdict == "failing" and verdict.source is None
    assert f"{str(missing)!r} (no such directory)" in verdict.reason  # all of it: that is what to fix
    assert "baton.tokenizer.path in config.yaml" in verdict.reason
    assert "counts with estimates" in verdict.reason


def test_an_unknown_backend_name_fails_naming_the_variable() -> None:
    verdict = check_tokenizer(load_settings({"BATON_TOKENIZER_BACKEND": "nosuch"}))
    assert verdict.verdict == "failing"
    assert "set by BATON_TOKENIZER_BACKEND" in verdict.reason and "'nosuch' is not installed" in verdict.reason


def test_a_backend_typo_in_config_yaml_names_the_config_key_and_the_nearest_backend() -> None:
    """Issue 31 item 5: a typo in config.yaml was told to set BATON_TOKENIZER_BACKEND."""
    pytest.importorskip("baton_hf")
    verdict = check_tokenizer(load_settings({}, hermes_block={"tokenizer": {"backend": "hff"}}))
    assert verdict.verdict == "failing" and "set by baton.tokenizer.backend in config.yaml" in verdict.reason
    assert "'hff' is not installed" in verdict.reason and "did you mean 'hf'?" in verdict.reason
    assert "set the backend (baton.tokenizer.backend in config.yaml, or BATON_TOKENIZER_BACKEND)" in verdict.reason


def test_the_real_tokenizer_is_exact_and_counts_what_the_counter_counts() -> None:
    pytest.importorskip("baton_hf")
    settings = load_settings({"BATON_TOKENIZER_BACKEND": "hf", "BATON_TOKENIZER_PATH": str(assets.qwen3_dir())})
    verdict = check_tokenizer(settings)
    backend, _ = build_backend(settings.tokenizer)
    from baton_engine.tokenizer_check import PROBE_REQUEST

    counter = TokenCounter(backend)
    try:
        expected = counter.count_chat(PROBE_REQUEST)
    finally:
        counter.close()
    assert verdict.verdict == "exact" and verdict.source == "hf:qwen3" and verdict.tokens == expected.tokens
    assert expected.exact


def test_no_tokenizer_configured_is_an_estimate_that_says_how_to_get_exact_counts() -> None:
    verdict = check_tokenizer(load_settings({}))
    assert verdict.verdict == "estimate" and verdict.source == "rough"
    assert "set baton.tokenizer" in verdict.reason


def test_a_server_that_cannot_count_is_failing_with_the_reason() -> None:
    pytest.importorskip("baton_vllm")
    settings = load_settings({"BATON_TOKENIZER_URL": "http://127.0.0.1:9", "BATON_TOKENIZER_TIMEOUT_SECONDS": "1"})
    verdict = check_tokenizer(settings)
    assert verdict.verdict == "failing" and "could not count a probe request" in verdict.reason
    assert "BATON_TOKENIZER_URL" in verdict.reason


def test_an_empty_request_is_zero_tokens_not_the_margin_alone() -> None:
    """Nothing to send, nothing to under-count: the margin protects estimates of real content only."""
    backend, _ = build_backend(TokenizerConfig(backend="rough"))
    counter = TokenCounter(backend, fallback_margin_tokens=1024)
    try:
        empty = counter.count_chat({"messages": []})
        one = counter.count_chat({"messages": [{"role": "user", "content": "hello"}]})
    finally:
        counter.close()
    assert empty.tokens == 0 and empty.margin_tokens == 0
    assert one.margin_tokens == 1024 and one.tokens > 1024
