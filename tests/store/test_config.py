"""Project settings: defaults, strict known keys, preserved unknown keys, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_engine.errors import UserInputError
from baton_engine.handoff.config import BatonConfig, default_config_json, load_config


def test_missing_file_gives_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    weights = config.detector.weights
    assert (weights.explicit, weights.context, weights.turn, weights.elapsed, weights.change) == (
        1.0, 0.70, 0.15, 0.10, 0.05)
    assert (weights.stuck, weights.work_boundary, weights.boundary_change) == (0.60, 0.25, 0.15)
    assert config.detector.recommend_threshold == 0.70
    assert config.detector.auto_prepare_threshold == 0.85
    assert config.detector.auto_prepare_min_readiness == 0.80
    assert config.detector.cooldown_minutes == 20
    assert config.detector.material_rise == 0.15
    assert config.detector.soft_turn_budget == 40
    assert config.detector.soft_duration_minutes == 90
    assert config.brief.max_tokens is None and config.brief.verbose is False  # the budget: brief_max_tokens
    assert config.policy.allowed_roots == [] and config.policy.max_field_chars == 20000
    assert {"git status", "git diff --stat", "pytest"} <= set(config.policy.recheck_allowlist)
    assert config.tokenizer.backend is None and config.tokenizer.url is None


def test_default_json_round_trips_and_is_deterministic(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(default_config_json())
    assert load_config(tmp_path) == BatonConfig()
    assert default_config_json() == default_config_json()


def test_partial_file_overrides_and_unknown_keys_survive(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"detector": {"cooldown_minutes": 5, "weights": {"context": 0.9}}, "future": {"x": 1}})
    )
    config = load_config(tmp_path)
    assert config.detector.cooldown_minutes == 5
    assert config.detector.weights.context == 0.9
    assert config.detector.weights.turn == 0.15
    assert config.model_dump()["future"] == {"x": 1}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"malformed JSON at line 1"),
        ("[1, 2]", r"expected a JSON object.*list"),
        ('{"detector": {"weights": {"context": "0.7"}}}', r"detector\.weights\.context"),
        ('{"detector": {"recommend_threshold": 1.5}}', r"detector\.recommend_threshold"),
        ('{"brief": {"max_tokens": 0}}', r"brief\.max_tokens"),
        ('{"policy": {"allowed_roots": "/tmp"}}', r"policy\.allowed_roots"),
        ('{"tokenizer": {"backend": 3}}', r"tokenizer\.backend"),
    ],
)
def test_malformed_files_name_the_file_and_the_key(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(UserInputError, match=message) as caught:
        load_config(tmp_path)
    assert "config.json" in str(caught.value)


def test_secret_looking_values_are_not_echoed(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"tokenizer": {"url": ["sk-live-SECRETVALUE"]}}')
    with pytest.raises(UserInputError) as caught:
        load_config(tmp_path)
    assert "SECRETVALUE" not in str(caught.value)


def test_unreadable_shapes_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    with pytest.raises(UserInputError, match="is a directory"):
        load_config(tmp_path)
    other = tmp_path / "b"
    other.mkdir()
    (other / "config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(UserInputError, match="not UTF-8"):
        load_config(other)
    big = tmp_path / "c"
    big.mkdir()
    (big / "config.json").write_text(" " * (2 << 20))
    with pytest.raises(UserInputError, match="larger than"):
        load_config(big)
