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
    misplaced_settings,
    read_config_file,
)
from baton_engine.hermes.admission import OFFLINE_WAY, admission, load_gate
from baton_engine.hermes.install import plugin_dir_state, plugin_target, read_manifest
from baton_engine.operations.context import effective_settings, project_config
from baton_engine.hermes.minimum import HermesMinimum, compression_window, hermes_minimum
from baton_engine.settings import describe_line
from baton_engine.tokens.server_window import ServedWindow, server_window

FALLBACK = "Hermes silently falls back to its built-in compressor"


def _check(name: str, status: str, detail: str) -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail}


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
        return _check("hermes.selection", "skipped", f"Baton is not selected in {home / 'config.yaml'} "
                      f"(context.engine: {view.engine}): Hermes uses {_engine_named(view.engine)}")
    if not view.plugin_enabled:
        why = ("it is in plugins.disabled" if PLUGIN_NAME in view.plugins_disabled
               else "it is not in plugins.enabled")
        return _check("hermes.selection", "fail",
                      f"context.engine is {ENGINE_NAME!r} but {why}; {FALLBACK}. To enable it, "
                      + admission(home).enable_hint())
    if not _entry_point_installed() and not (plugin_target(home) / "__init__.py").is_file():
        return _check("hermes.selection", "fail",
                      f"no Baton plugin found (no hermes_agent.plugins entry point, no {plugin_target(home)}); "
                      f"{FALLBACK}. Run `baton hermes install`")
    return _check("hermes.selection", "pass", f"context.engine: {ENGINE_NAME} and plugin enabled in {home}")


def _engine_named(engine: str) -> str:
    return "its built-in compressor" if engine == "compressor" else f"the context engine {engine!r}"


def check_admission(home: Path) -> dict[str, str]:
    """Hermes 0.22's plugin admission (``hermes/admission.py``): whether ``hermes plugins enable`` can work here, and
    the way out when it cannot (the failure itself leaves no trace in Hermes' state)."""
    gate = admission(home)
    if not gate.gated:
        return _check("hermes.admission", "skipped", "this Hermes has no plugin admission: `hermes plugins enable` "
                      "writes config.yaml itself")
    try:
        view = hermes_view(read_config_file(home))
    except BatonError as exc:
        return _check("hermes.admission", "skipped", f"config.yaml unreadable ({exc})")
    if gate.runtime in ("present", "packaged"):
        return _check("hermes.admission", "pass", f"Hermes' plugin manager has its runtime ({gate.runtime}): "
                      "`hermes plugins enable|disable|install` can admit plugin changes")
    needs = (f"every `hermes plugins enable|disable|install` on this Hermes first downloads a managed CPython "
             f"(python-build-standalone) into {gate.where or 'its tools/ store'}; without internet it fails with "
             "`AdmissionRefused: python: install failed` and changes nothing")
    if view.plugin_enabled:
        return _check("hermes.admission", "pass", f"Baton is in plugins.enabled (loaded without admission); note: "
                      f"{needs}. Offline, `baton hermes uninstall` turns Baton off")
    if not view.engine_selected:
        return _check("hermes.admission", "skipped", f"Baton is off; to turn it on here: {OFFLINE_WAY} ({needs})")
    return _check("hermes.admission", "warn" if gate.runtime == "unknown" else "fail",
                  f"context.engine is {ENGINE_NAME!r} but Baton is not enabled, and {needs}. The way out offline: "
                  f"{OFFLINE_WAY}")


def check_plugin_dir(home: Path) -> dict[str, str]:
    """The copied plugin directory against the installed Baton's (a pip upgrade leaves the old copy behind)."""
    state = plugin_dir_state(home)
    if state == "absent":
        return _check("hermes.plugin_dir", "skipped", f"no {plugin_target(home)} (Hermes loads Baton through its "
                      "pip entry point)")
    gate = load_gate(read_manifest(plugin_target(home)))
    if gate is not None:
        return _check("hermes.plugin_dir", "fail", f"Hermes skips {plugin_target(home)}: {gate} (plugin.yaml's "
                      f"requires_hermes: the Hermes versions that Baton was tested on); {FALLBACK}. Use a tested "
                      "Hermes (docs/hermes-versions.md), or install the Baton made for yours and run "
                      "`baton hermes install`")
    if state == "stale":
        return _check("hermes.plugin_dir", "fail", f"{plugin_target(home)} is from another Baton version (its "
                      "plugin.yaml differs from the installed Baton's): run `baton hermes install` to refresh it "
                      "(config.yaml's baton: block and the project's .baton/ are not touched)")
    return _check("hermes.plugin_dir", "pass", f"{plugin_target(home)} matches the installed Baton ({state})")


def check_settings(home: Path, start: Path | None = None) -> dict[str, str]:
    """The settings the engine would start with for the project at or above ``start``, each with its origin."""
    try:
        settings, _view = load_hermes_settings(home, project_dir=start)
    except BatonError as exc:
        return _check("hermes.settings", "fail", f"{exc}; the plugin refuses to start until this is fixed")
    misplaced = misplaced_settings(read_config_file(home))
    if misplaced:
        return _check("hermes.settings", "fail", "; ".join(misplaced) + f" (in {home / 'config.yaml'})")
    if settings.ignored:
        return _check("hermes.settings", "fail", "; ".join(settings.ignored) + f". Fix the key(s) in "
                      f"{home / 'config.yaml'}: Baton starts without them, so the value you meant is not used")
    line = describe_line(settings)
    try:
        same = start is not None and describe_line(effective_settings(project_config(start))) == line
    except BatonError:
        same = False
    return _check("hermes.settings", "pass", "baton: block, BATON_* and project settings valid; in Hermes: "
                  + ("the values of the settings row" if same else line))


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


def _below_minimum(what: str, window: int, minimum: HermesMinimum, path: Path) -> str:
    """What to change when ``window`` is below Hermes' floor: the floor's setting (0.22), else a larger window."""
    if minimum.setting is not None:
        return (f"{what} {window:,} is below Hermes {minimum.version}'s minimum {minimum.tokens:,}: set "
                f"{minimum.setting}: {window} in {path} (or serve a window of at least {minimum.tokens:,})")
    return (f"{what} {window:,} is below Hermes {minimum.version}'s fixed minimum {minimum.tokens:,} "
            f"(MINIMUM_CONTEXT_LENGTH; Hermes refuses to start): serve at least {minimum.tokens:,} tokens and set "
            f"model.context_length to it, or use Hermes 0.22+ with agent.minimum_tool_context_length: {window}")


def window_problems(configured: int | None, served: ServedWindow | None, minimum: HermesMinimum | None,
                    compression: tuple[int | None, str], path: Path) -> list[str]:
    """Why this window cannot work, one clause each with what to change; empty when it can."""
    problems = []
    if configured is not None and served is not None and configured > served.tokens:
        problems.append(f"model.context_length {configured:,} is larger than the window the server serves "
                        f"({served.tokens:,}, {served.said_by}): set model.context_length: {served.tokens} in "
                        f"{path}, or start the server with a window of {configured:,}")
    windows = [w for w in (configured, served.tokens if served else None) if w is not None]
    if minimum is not None and windows and min(windows) < minimum.tokens:
        problems.append(_below_minimum("the window", min(windows), minimum, path))
    compressed, where = compression
    if (minimum is not None and compressed is not None and compressed < minimum.tokens
            and (not windows or compressed != min(windows))):
        problems.append(_below_minimum(f"the compression model's window ({where})", compressed, minimum, path))
    return problems


def check_window(home: Path, start: Path | None = None) -> dict[str, str]:
    """config.yaml's ``model.context_length``, the window the model server states and the installed Hermes'
    minimum (main and compression model), compared: a window that cannot work fails with what to change."""
    try:
        config = read_config_file(home)
        settings, view = load_hermes_settings(home, project_dir=start)
    except BatonError as exc:
        return _check("hermes.window", "skipped", f"settings invalid ({exc})")
    url = view.base_url or settings.tokenizer.url
    if view.context_length is None and not url:
        return _check("hermes.window", "skipped", f"no model.context_length and no model.base_url in {home}")
    served = server_window(url, view.model, settings.tokenizer.timeout_seconds) if url else None
    minimum = hermes_minimum(config)
    main = view.context_length if served is None else min(view.context_length or served.tokens, served.tokens)
    problems = window_problems(view.context_length, served, minimum, compression_window(config, main),
                               home / "config.yaml")
    if problems:
        return _check("hermes.window", "fail", "; ".join(problems))
    facts = [f"model.context_length {view.context_length:,}" if view.context_length
             else "no model.context_length (Hermes asks the server)"]
    if served is not None:
        facts.append(f"the server serves {served.tokens:,} ({served.said_by})")
    else:
        facts.append(f"the server at {url} did not state its window (vLLM /v1/models, llama.cpp /props, Ollama "
                     "/api/ps or a Modelfile num_ctx in /api/show)" if url else "no model.base_url to ask")
    facts.append("hermes-agent not installed here: its minimum unchecked" if minimum is None else
                 f"Hermes {minimum.version}'s minimum {minimum.tokens:,}"
                 + (f" ({minimum.setting})" if minimum.setting else " (fixed)"))
    return _check("hermes.window", "pass" if served is not None and minimum is not None else "warn",
                  "; ".join(facts))


def check_engine_copy() -> dict[str, str]:
    """Hermes deep-copies the engine per agent; a failing copy means a silent fallback."""
    version = installed_hermes_version()
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

    return (lambda _start: check_selection(where()), lambda _start: check_admission(where()),
            lambda _start: check_plugin_dir(where()), lambda start: check_settings(where(), start),
            lambda start: check_tokenizer(where(), start), lambda start: check_window(where(), start),
            lambda _start: check_engine_copy())
