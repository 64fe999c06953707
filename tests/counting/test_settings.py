from __future__ import annotations

import json
import logging

import pytest

from baton_engine.errors import UserInputError
from baton_engine.handoff.config import parse_config
from baton_engine.handoff.render import DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS
from baton_engine.settings import ENV_VARIABLES, BatonSettings, SettingsError, describe, load_settings
from baton_engine.tokens.contract import TokenizerConfig

SECRET = "sk-test-0123456789abcdef0123456789abcdef"


def test_defaults_with_empty_environment() -> None:
    settings = load_settings({})
    assert settings == BatonSettings()
    assert settings.tokenizer == TokenizerConfig(backend="auto", timeout_seconds=10.0)
    assert (settings.fallback_margin_tokens, settings.min_output_tokens, settings.compression_window_tokens) == (
        1024, 4096, None)


def test_every_baton_variable_is_read() -> None:
    settings = load_settings({
        "BATON_TOKENIZER_BACKEND": " VLLM ", "BATON_TOKENIZER_URL": "http://127.0.0.1:8000/",
        "BATON_TOKENIZER_MODEL": "qwen3", "BATON_TOKENIZER_PATH": "/models/qwen3",
        "BATON_TOKENIZER_TIMEOUT_SECONDS": "2.5", "BATON_TOKENIZER_USER_AGENT": "baton-test",
        "BATON_TOKENIZER_API_KEY": SECRET, "BATON_FALLBACK_MARGIN_TOKENS": "0",
        "BATON_MIN_OUTPUT_TOKENS": "512", "BATON_COMPRESSION_WINDOW_TOKENS": "60000",
    })
    assert settings.tokenizer == TokenizerConfig("vllm", "http://127.0.0.1:8000", "qwen3", "/models/qwen3", 2.5,
                                                 "baton-test", SECRET)
    assert (settings.fallback_margin_tokens, settings.min_output_tokens, settings.compression_window_tokens) == (
        0, 512, 60000)
    assert dict(settings.origins)["api_key"] == "BATON_TOKENIZER_API_KEY"


def test_incontext_aliases_are_accepted_and_baton_wins() -> None:
    env = {"INCONTEXT_BACKEND": "vllm", "INCONTEXT_TOKENIZER_URL": "https://inference.example/tokenize",
           "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS": "30", "INCONTEXT_TOKENIZER_USER_AGENT": "ic",
           "INCONTEXT_FALLBACK_MARGIN_TOKENS": "2048", "INCONTEXT_MIN_OUTPUT_TOKENS": "1000",
           "INCONTEXT_COMPRESSION_WINDOW_TOKENS": "90000"}
    settings = load_settings(env)
    assert settings.tokenizer.url == "https://inference.example/tokenize"
    assert (settings.tokenizer.backend, settings.tokenizer.timeout_seconds, settings.tokenizer.user_agent) == (
        "vllm", 30.0, "ic")
    assert (settings.fallback_margin_tokens, settings.min_output_tokens, settings.compression_window_tokens) == (
        2048, 1000, 90000)
    both = load_settings({**env, "BATON_TOKENIZER_BACKEND": "hf", "BATON_MIN_OUTPUT_TOKENS": "77"})
    assert both.tokenizer.backend == "hf" and both.min_output_tokens == 77
    assert dict(both.origins)["min_output_tokens"] == "BATON_MIN_OUTPUT_TOKENS"


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("BATON_TOKENIZER_BACKEND", "   ", "non-empty"),
        ("INCONTEXT_BACKEND", "", "non-empty"),
        ("BATON_TOKENIZER_BACKEND", "my backend!", "backend name"),
        ("BATON_TOKENIZER_URL", "localhost:8000", "http\\(s\\) URL"),
        ("INCONTEXT_TOKENIZER_URL", "ftp://host/tokenize", "http\\(s\\) URL"),
        ("BATON_TOKENIZER_TIMEOUT_SECONDS", "0", "seconds > 0"),
        ("BATON_TOKENIZER_TIMEOUT_SECONDS", "nan", "seconds > 0"),
        ("BATON_TOKENIZER_TIMEOUT_SECONDS", "ten", "seconds > 0"),
        ("BATON_FALLBACK_MARGIN_TOKENS", "-1", "integer >= 0"),
        ("BATON_MIN_OUTPUT_TOKENS", "0", "integer >= 1"),
        ("INCONTEXT_MIN_OUTPUT_TOKENS", "4k", "integer >= 1"),
        ("BATON_COMPRESSION_WINDOW_TOKENS", "", "integer >= 1"),
        ("BATON_TOKENIZER_API_KEY", " ", "non-empty"),
    ],
)
def test_blank_or_malformed_values_name_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError, match=f"^{variable} must be .*{expected}") as info:
        load_settings({variable: value})
    assert isinstance(info.value, UserInputError) and info.value.exit_code == 2


def test_window_must_leave_room_for_reserve_and_margin() -> None:
    with pytest.raises(SettingsError, match="compression window \\(5000\\) must exceed"):
        load_settings({"BATON_COMPRESSION_WINDOW_TOKENS": "5000"})


def test_reads_the_process_environment_afresh_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_VARIABLES.values():
        for name in names:
            if name:
                monkeypatch.delenv(name, raising=False)
    assert load_settings().min_output_tokens == 4096
    monkeypatch.setenv("BATON_MIN_OUTPUT_TOKENS", "100")
    assert load_settings().min_output_tokens == 100
    monkeypatch.setenv("INCONTEXT_BACKEND", "rough")
    assert load_settings().tokenizer.backend == "rough"


def test_api_key_never_in_repr(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings = load_settings({"BATON_TOKENIZER_API_KEY": SECRET})
    assert settings.tokenizer.api_key == SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings.origins)
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_hermes_block_merges_with_env_winning() -> None:
    block = {
        "auto_checkpoint_on_end": False, "fallback_token_threshold": 50000, "degradation_keep_recent": 8,
        "degradation_max_tokens": 6000, "brief_max_tokens": 900, "fresh_tail_tokens": 4000,
        "min_output_tokens": 2000, "compression_window_tokens": None,
        "tokenizer": {"backend": "hf", "path": "/models/qwen3", "timeout_seconds": 3},
    }
    settings = load_settings({"BATON_TOKENIZER_BACKEND": "rough"}, hermes_block=block)
    assert settings.tokenizer.backend == "rough"  # env wins
    assert settings.tokenizer.path == "/models/qwen3" and settings.tokenizer.timeout_seconds == 3.0
    assert (settings.auto_checkpoint_on_end, settings.fallback_token_threshold, settings.degradation_keep_recent,
            settings.degradation_max_tokens, settings.brief_max_tokens, settings.fresh_tail_tokens,
            settings.min_output_tokens, settings.compression_window_tokens) == (
        False, 50000, 8, 6000, 900, 4000, 2000, None)
    assert dict(settings.origins)["brief_max_tokens"] == "baton.brief_max_tokens in config.yaml"


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"tokenizer": "hf"}, "baton.tokenizer in config.yaml must be a mapping"),
        ({"auto_checkpoint_on_end": "yes"}, "baton.auto_checkpoint_on_end in config.yaml must be true or false"),
        ({"brief_max_tokens": True}, "baton.brief_max_tokens in config.yaml must be an integer"),
        ({"degradation_keep_recent": -1}, "baton.degradation_keep_recent in config.yaml must be an integer >= 0"),
        ({"tokenizer": {"url": 8000}}, "baton.tokenizer.url in config.yaml must be a non-empty string"),
        (["not", "a", "mapping"], "baton: in config.yaml must be a mapping"),
    ],
)
def test_bad_hermes_block_names_the_key(block: object, expected: str) -> None:
    with pytest.raises(SettingsError, match=expected.replace(".", "\\.").replace("(", "\\(")):
        load_settings({}, hermes_block=block)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"fresh_tail_token": 6000}, "baton.fresh_tail_token in config.yaml is not a setting (ignored); "
                                     "did you mean baton.fresh_tail_tokens?"),
        ({"brief_max_token": 5}, "baton.brief_max_token in config.yaml is not a setting (ignored); "
                                 "did you mean baton.brief_max_tokens?"),
        ({"tokenizer": {"pth": "/m"}}, "baton.tokenizer.pth in config.yaml is not a setting (ignored); "
                                       "did you mean baton.tokenizer.path?"),
        ({"tokenizer": {"uri": "x"}}, "baton.tokenizer.uri in config.yaml is not a setting (ignored); "
                                      "did you mean baton.tokenizer.url?"),
        ({"colour": "blue"}, "baton.colour in config.yaml is not a setting (ignored); known: "),
        # written as its variable, with dashes or flattened: still the config key to write (issue 31 item 5)
        ({"BATON_FRESH_TAIL_TOKENS": 6000}, "baton.BATON_FRESH_TAIL_TOKENS in config.yaml is not a setting "
                                            "(ignored); did you mean baton.fresh_tail_tokens?"),
        ({"fresh-tail-tokens": 6000}, "baton.fresh-tail-tokens in config.yaml is not a setting (ignored); "
                                      "did you mean baton.fresh_tail_tokens?"),
        ({"tokenizer_backend": "hf"}, "baton.tokenizer_backend in config.yaml is not a setting (ignored); "
                                      "did you mean baton.tokenizer.backend?"),
    ],
)
def test_an_unknown_key_is_ignored_and_named_with_the_nearest_known_one(block: dict, expected: str) -> None:
    """A typo must not stop Baton (Hermes would silently use its compressor): the key is ignored, the other
    settings hold, and the message names it (the plugin prints it, doctor fails on it)."""
    settings = load_settings({}, hermes_block={**block, "min_output_tokens": 2000})
    assert settings.min_output_tokens == 2000
    assert len(settings.ignored) == 1 and settings.ignored[0].startswith(expected)
    assert settings.fresh_tail_tokens is None and settings.brief_max_tokens == load_settings({}).brief_max_tokens
    assert load_settings({}, hermes_block={"fresh_tail_tokens": 6000}).ignored == ()


def test_one_precedence_env_then_config_yaml_then_project_config_then_default() -> None:
    project = parse_config({"tokenizer": {"backend": "hf", "path": "/project/tok", "url": None,
                                          "model": "from-project"}})
    only_project = load_settings(env={}, project=project)
    assert (only_project.tokenizer.backend, only_project.tokenizer.path) == ("hf", "/project/tok")
    hermes = load_settings(env={}, hermes_block={"tokenizer": {"path": "/hermes/tok", "model": None}},
                           project=project)
    assert (hermes.tokenizer.backend, hermes.tokenizer.path, hermes.tokenizer.model) == \
        ("hf", "/hermes/tok", "from-project")  # an explicit null in config.yaml falls through
    env = load_settings(env={"BATON_TOKENIZER_PATH": "/env/tok"}, hermes_block={"tokenizer": {"path": "/h"}},
                        project=project)
    assert env.tokenizer.path == "/env/tok"
    origins = {row["setting"]: row["origin"] for row in describe(env)}
    assert origins["path"] == "BATON_TOKENIZER_PATH"
    assert origins["backend"] == "tokenizer.backend in .baton/config.json"
    assert origins["brief_max_tokens"] == "default"
    secret = describe(load_settings(env={"BATON_TOKENIZER_API_KEY": "sk-do-not-print"}))
    assert "sk-do-not-print" not in json.dumps(secret)


def test_the_brief_budget_is_one_setting_config_yaml_over_project_over_default() -> None:
    """``brief.max_tokens`` in .baton/config.json and ``baton.brief_max_tokens`` are one setting, one precedence."""
    assert load_settings(env={}).brief_max_tokens == DEFAULT_MAX_TOKENS
    assert parse_config({}).brief.max_tokens is None  # an unset project key means "the setting", not a 2nd default
    project = parse_config({"brief": {"max_tokens": 800}})
    from_project = load_settings(env={}, project=project)
    assert from_project.brief_max_tokens == 800
    assert dict(from_project.origins)["brief_max_tokens"] == "brief.max_tokens in .baton/config.json"
    from_yaml = load_settings(env={}, hermes_block={"brief_max_tokens": 900}, project=project)
    assert from_yaml.brief_max_tokens == 900
    assert dict(from_yaml.origins)["brief_max_tokens"] == "baton.brief_max_tokens in config.yaml"
    assert load_settings(env={}, hermes_block={"brief_max_tokens": None}, project=project).brief_max_tokens == 800


@pytest.mark.parametrize(("block", "project", "expected"), [
    ({"brief_max_tokens": MIN_MAX_TOKENS - 1}, None, "baton.brief_max_tokens in config.yaml"),
    (None, {"brief": {"max_tokens": 50}}, "brief.max_tokens in .baton/config.json"),
])
def test_a_brief_budget_no_brief_fits_in_fails_naming_where_it_was_set(block: dict | None, project: dict | None,
                                                                       expected: str) -> None:
    with pytest.raises(SettingsError, match=f"{expected.replace('.', '[.]')} must be an integer >= {MIN_MAX_TOKENS}"):
        load_settings(env={}, hermes_block=block, project=parse_config(project) if project else None)
