"""Project settings in ``.baton/config.json``.

Why pydantic with ``extra="allow"``: settings written by a newer Baton (or by hand) survive a
round trip, while known keys are type-checked strictly so a typo'd value fails loudly with the
file and the key named instead of silently changing detector behaviour.
A missing file means defaults; ``init`` writes ``default_config_json()``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton_engine.errors import UserInputError

CONFIG_FILE_NAME = "config.json"
MAX_CONFIG_BYTES = 1 << 20


class _Settings(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, validate_assignment=True)


class DetectorWeights(_Settings):
    """Weights of the spec's pressure formula (see baton-spec.md, Detector)."""

    explicit: float = Field(default=1.0, ge=0)
    context: float = Field(default=0.70, ge=0)
    turn: float = Field(default=0.15, ge=0)
    elapsed: float = Field(default=0.10, ge=0)
    change: float = Field(default=0.05, ge=0)
    stuck: float = Field(default=0.60, ge=0)
    work_boundary: float = Field(default=0.25, ge=0)
    boundary_change: float = Field(default=0.15, ge=0)


class DetectorConfig(_Settings):
    weights: DetectorWeights = Field(default_factory=DetectorWeights)
    recommend_threshold: float = Field(default=0.70, ge=0, le=1)
    auto_prepare_threshold: float = Field(default=0.85, ge=0, le=1)
    auto_prepare_min_readiness: float = Field(default=0.80, ge=0, le=1)
    cooldown_minutes: float = Field(default=20, ge=0)
    material_rise: float = Field(default=0.15, ge=0, le=1)
    soft_turn_budget: int = Field(default=40, gt=0)
    soft_duration_minutes: float = Field(default=90, gt=0)


class BriefConfig(_Settings):
    """``max_tokens`` None means "the ``brief_max_tokens`` setting" (``settings.load_settings`` resolves it)."""

    max_tokens: int | None = Field(default=None, gt=0)
    verbose: bool = False


class PolicyConfig(_Settings):
    allowed_roots: list[str] = Field(default_factory=list)
    recheck_allowlist: list[str] = Field(
        default_factory=lambda: ["git status", "git diff --stat", "git log --oneline", "pytest", "python -m pytest"]
    )
    max_field_chars: int = Field(default=20000, gt=0)


class ProjectTokenizerConfig(_Settings):
    """Optional per-project tokenizer override; None everywhere means "use the global settings"."""

    backend: str | None = None
    path: str | None = None
    url: str | None = None
    model: str | None = None


class BatonConfig(_Settings):
    detector: DetectorConfig = Field(default_factory=DetectorConfig)
    brief: BriefConfig = Field(default_factory=BriefConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    tokenizer: ProjectTokenizerConfig = Field(default_factory=ProjectTokenizerConfig)


def default_config_json() -> str:
    """The defaults as written by ``init``: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(BatonConfig().model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def _key_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def parse_config(data: Any, *, source: str = CONFIG_FILE_NAME) -> BatonConfig:
    """Validate already-decoded settings; errors name the source and every bad key (never values)."""
    if not isinstance(data, dict):
        raise UserInputError(f"{source}: expected a JSON object at the top level, got {type(data).__name__}")
    try:
        return BatonConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_key_path(err['loc'])}: {err['msg']}" for err in exc.errors(include_input=False))
        raise UserInputError(
            f"{source}: invalid setting(s): {problems}. Fix or delete the key(s) to use defaults."
        ) from None


def load_config(baton_dir: Path) -> BatonConfig:
    """Settings from ``<baton_dir>/config.json``; a missing file gives the defaults."""
    path = Path(baton_dir) / CONFIG_FILE_NAME
    try:
        if path.is_symlink() or (path.exists() and not (path.is_file() or path.is_dir())):
            raise UserInputError(f"{path}: not a regular file (a symlink or device?); it must be a JSON file "
                                 "inside the project")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UserInputError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; this is not a Baton config file")
        raw = path.read_bytes()
    except FileNotFoundError:
        return BatonConfig()
    except IsADirectoryError:
        raise UserInputError(f"{path}: is a directory; it must be a JSON file") from None
    except OSError as exc:
        raise UserInputError(f"{path}: cannot be read ({type(exc).__name__})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserInputError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_config(data, source=str(path))
