"""``baton doctor`` checks for Hermes: would Hermes really use Baton, or silently fall back to its compressor?

Hermes falls back WITHOUT an error when the plugin is not in ``plugins.enabled``, when ``context.engine``
does not equal the engine's name, when the engine cannot be deep-copied, or under ``HERMES_SAFE_MODE``.
These checks read the same config.yaml Hermes reads and say which case applies and how to fix it.
Importing this module does not import Hermes.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from baton_engine import tokenizer_check
from baton_engine.errors import BatonError
from baton_engine.hermes.config import (
    ENGINE_NAME,
    PLUGIN_NAME,
    hermes_home,
    hermes_view,
    installed_hermes_version,
    load_hermes_settings,
    read_config_file,
)
from baton_engine.hermes.install import plugin_target
from baton_engine.settings import describe_line

FALLBACK = "Hermes silently falls back to its built-in compressor"


def _check(name: str, status: str, detail: str) -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail}


def _hermes_version() -> str | None:
    return installed_hermes_version()


def _entry_point_installed() -> bool:
    return any(ep.name == PLUGIN_NAME for ep in metadata.entry_points(group="hermes_agent.plugins"))


def check_selection(home: Path) -> dict[str, str]:
    """Engine selection and plugin enablement, as Hermes' PluginManager and agent init decide them."""
    try:
        view = hermes_view(read_config_file(home))
    except BatonError as exc:
        return _check("hermes.selection", "fail", str(exc))
    if os.environ.get("HERMES_SAFE_MODE", "").strip().lower() in ("1", "true", "yes", "on"):
        return _check("hermes.selection", "fail", f"HERMES_SAFE_MODE is set: no plugin loads; {FALLBACK}")
    if view.engine != ENGINE_NAME:
        if view.engine.strip().lower() == ENGINE_NAME:
            return _check("hermes.selection", "fail",
                          f"context.engine is {view.engine!r}, not {ENGINE_NAME!r} (names must match exactly); "
                          f"{FALLBACK}")
        if view.plugin_enabled:
            return _check("hermes.selection", "warn",
                          f"plugin enabled but context.engine is {view.engine!r}: Baton is loaded, not used; "
                          f"set context.engine: {ENGINE_NAME} (or `baton hermes install --select`)")
        return _check("hermes.selection", "skipped", f"Baton is not selected in {home / 'config.yaml'}")
    if not view.plugin_enabled:
        why = ("it is in plugins.disabled" if PLUGIN_NAME in view.plugins_disabled
               else "it is not in plugins.enabled")
        return _check("hermes.selection", "fail",
                      f"context.engine is {ENGINE_NAME!r} but {why}; {FALLBACK}. "
                      f"Run `hermes plugins enable {PLUGIN_NAME}` or `baton hermes install --select`")
    if not _entry_point_installed() and not (plugin_target(home) / "__init__.py").is_file():
        return _check("hermes.selection", "fail",
                      f"no Baton plugin found (no hermes_agent.plugins entry point, no {plugin_target(home)}); "
                      f"{FALLBACK}. Run `baton hermes install`")
    return _check("hermes.selection", "pass", f"context.engine: {ENGINE_NAME} and plugin enabled in {home}")


def check_settings(home: Path, start: Path | None = None) -> dict[str, str]:
    """The settings the engine would start with for the project at or above ``start``, each with its origin."""
    try:
        settings, _view = load_hermes_settings(home, project_dir=start)
    except BatonError as exc:
        return _check("hermes.settings", "fail", f"{exc}; the plugin refuses to start until this is fixed")
    if settings.ignored:
        return _check("hermes.settings", "fail", "; ".join(settings.ignored) + f". Fix the key(s) in "
                      f"{home / 'config.yaml'}: Baton starts without them, so the value you meant is not used")
    return _check("hermes.settings", "pass",
                  f"baton: block, BATON_* and project settings valid; in Hermes: {describe_line(settings)}")


def check_tokenizer(home: Path, start: Path | None = None) -> dict[str, str]:
    """The tokenizer Hermes' engine would count with, built and asked to count one request (``tokenizer_check``):
    exact -> pass, estimate -> warn, failing (cannot start or cannot count) -> fail with the reason."""
    try:
        settings, _view = load_hermes_settings(home, project_dir=start)
    except BatonError as exc:
        return _check("hermes.tokenizer", "skipped", f"settings invalid ({exc})")
    verdict = tokenizer_check.check_tokenizer(settings)
    status = {"exact": "pass", "estimate": "warn", "failing": "fail"}[verdict.verdict]
    return _check("hermes.tokenizer", status, f"{verdict.verdict}: {verdict.reason}")


def check_engine_copy() -> dict[str, str]:
    """Hermes deep-copies the engine per agent; a failing copy means a silent fallback."""
    version = _hermes_version()
    if version is None:
        return _check("hermes.engine", "skipped", "hermes-agent is not installed in this environment")
    try:
        from baton_engine.hermes.engine import BatonContextEngine

        engine = BatonContextEngine()
        copied = copy.deepcopy(engine)
        if copied.name != ENGINE_NAME:
            return _check("hermes.engine", "fail", f"engine name {copied.name!r} != {ENGINE_NAME!r}; {FALLBACK}")
    # Hermes' own check: it deep-copies the engine per agent and falls back silently on ANY error, so any failure here
    # is that fallback (reported by type only)
    except Exception as exc:  # noqa: BLE001
        return _check("hermes.engine", "fail", f"engine cannot be built or deep-copied ({type(exc).__name__}); "
                      f"{FALLBACK}")
    return _check("hermes.engine", "pass", f"engine builds and deep-copies under hermes-agent {version}")


def checks(home: Path | None = None) -> tuple[Callable[[Path], dict[str, str]], ...]:
    """The Hermes checks `baton doctor` runs, against ``home`` (``--hermes-home``; else ``$HERMES_HOME`` or
    ``~/.hermes``, as Hermes resolves it)."""
    def where() -> Path:
        return hermes_home(home)

    return (lambda _start: check_selection(where()), lambda start: check_settings(where(), start),
            lambda start: check_tokenizer(where(), start), lambda _start: check_engine_copy())
