"""Hermes' own smallest context window, read from the installed Hermes (for ``baton doctor``).

Why from Hermes' code and not a copied number: the floor moved between versions. 0.19 refuses a main or compression
model below ``MINIMUM_CONTEXT_LENGTH`` (64,000, fixed) in ``agent/model_metadata.py``; 0.22 makes it the config key
``agent.minimum_tool_context_length`` (``get_minimum_tool_context_length``, same 64,000 default). Whatever the
installed version says is what Hermes will enforce at agent start (main model) and at the first compaction
(compression model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from baton_engine.hermes.config import installed_hermes_version

SETTING = "agent.minimum_tool_context_length"


@dataclass(frozen=True)
class HermesMinimum:
    """``tokens``: the floor; ``version``: the installed Hermes; ``setting``: the config key that sets the floor in
    this version, None where it is fixed (0.19)."""

    tokens: int
    version: str
    setting: str | None


def _section(config: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    for name in names:
        value = config.get(name)
        config = value if isinstance(value, Mapping) else {}
    return config


def hermes_minimum(config: Mapping[str, Any]) -> HermesMinimum | None:
    """The floor the installed Hermes applies under ``config`` (config.yaml parsed); None without Hermes."""
    version = installed_hermes_version()
    if version is None:
        return None
    try:
        from agent import model_metadata
    except ImportError:
        return None
    getter = getattr(model_metadata, "get_minimum_tool_context_length", None)
    if callable(getter):  # 0.22: the agent seeds the floor from its config section, then asks this (agent_init)
        agent = SimpleNamespace(_minimum_tool_context_length=_section(config, "agent").get(
            "minimum_tool_context_length"))
        return HermesMinimum(int(getter(agent)), version, SETTING)
    fixed = getattr(model_metadata, "MINIMUM_CONTEXT_LENGTH", None)
    return HermesMinimum(fixed, version, None) if type(fixed) is int else None


def compression_window(config: Mapping[str, Any], main_window: int | None) -> tuple[int | None, str]:
    """The compression model's window as Hermes resolves it from config: ``auxiliary.compression.context_length``
    when set; the main model's window when no other compression model is named; else unknown."""
    section = _section(config, "auxiliary", "compression")
    length = section.get("context_length")
    if type(length) is int and length > 0:
        return length, "auxiliary.compression.context_length"
    model = section.get("model")
    if not model or str(model).strip().lower() == "auto":
        return main_window, "the main model (no auxiliary.compression.model)"
    return None, f"auxiliary.compression.model {model!s} (no auxiliary.compression.context_length)"
