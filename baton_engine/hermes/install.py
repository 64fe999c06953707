"""``baton hermes install``: put the plugin directory in ``$HERMES_HOME/plugins/baton/``; select only on request.

Why explicit selection: a context engine replaces Hermes' compressor for every conversation, so the
installer never edits ``plugins.enabled`` / ``context.engine`` unless asked (``--select``). The config
edit keeps every other key and is written atomically.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from baton_engine.errors import ConflictError, UserInputError
from baton_engine.hermes.config import ENGINE_NAME, PLUGIN_NAME, read_config_file

TEMPLATE_DIR = Path(__file__).with_name("plugin_dir")
TEMPLATE_FILES = ("plugin.yaml", "__init__.py")


def plugin_target(home: Path) -> Path:
    return home / "plugins" / PLUGIN_NAME


def write_plugin_dir(home: Path, *, link: bool = False) -> dict[str, Any]:
    """Copy (or symlink) the template directory; an existing foreign directory is never overwritten."""
    target = plugin_target(home)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        if not target.is_dir() or set(p.name for p in target.iterdir()) - {*TEMPLATE_FILES, "__pycache__"}:
            raise ConflictError(f"{target} exists and holds other files; move it away and run the install again")
        shutil.rmtree(target)
    if link:
        target.symlink_to(TEMPLATE_DIR.resolve(), target_is_directory=True)
    else:
        target.mkdir()
        for name in TEMPLATE_FILES:
            shutil.copyfile(TEMPLATE_DIR / name, target / name)
    return {"path": str(target), "linked": link}


def plugin_dir_state(home: Path) -> str:
    """``absent``, ``linked`` (a symlink to this Baton's template), ``current`` (a copy of it) or ``stale`` (a copy or
    link from another Baton: its plugin.yaml differs, e.g. left behind by a pip upgrade)."""
    target = plugin_target(home)
    if not target.exists():
        return "absent"
    if target.is_symlink() and target.resolve() == TEMPLATE_DIR.resolve():
        return "linked"
    same = all((target / name).is_file() and (target / name).read_bytes() == (TEMPLATE_DIR / name).read_bytes()
               for name in TEMPLATE_FILES)
    return "current" if same else "stale"


def read_manifest(directory: Path) -> dict[str, Any]:
    """A plugin directory's plugin.yaml as a mapping (empty when missing or not YAML: nothing to gate on)."""
    try:
        data = yaml.safe_load((directory / "plugin.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _atomic_yaml(path: Path, data: dict[str, Any]) -> None:
    fd, temp = tempfile.mkstemp(prefix=".config.", suffix=".yaml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(data, handle, sort_keys=False, allow_unicode=True)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def select_engine(home: Path) -> dict[str, Any]:
    """Add ``baton`` to ``plugins.enabled`` (and out of ``plugins.disabled``, where 0.19's ``hermes plugins disable``
    puts it) and set ``context.engine: baton`` (other keys untouched)."""
    config = read_config_file(home)
    for key in ("plugins", "context"):
        if key in config and not isinstance(config[key], dict):
            raise UserInputError(f"{home / 'config.yaml'}: `{key}` must be a mapping; fix it by hand first")
    plugins = config.setdefault("plugins", {})
    enabled = plugins.get("enabled")
    if enabled is not None and not isinstance(enabled, list):
        raise UserInputError(f"{home / 'config.yaml'}: plugins.enabled must be a list; fix it by hand first")
    enabled = list(enabled or [])
    changed = []
    if PLUGIN_NAME not in enabled:
        enabled.append(PLUGIN_NAME)
        changed.append("plugins.enabled")
    plugins["enabled"] = enabled
    disabled = plugins.get("disabled")
    if isinstance(disabled, list) and PLUGIN_NAME in disabled:  # Hermes: an explicit disable wins over enabled
        plugins["disabled"] = [name for name in disabled if name != PLUGIN_NAME]
        changed.append("plugins.disabled")
    context = config.setdefault("context", {})
    previous_engine = context.get("engine")
    if previous_engine != ENGINE_NAME:
        context["engine"] = ENGINE_NAME
        changed.append("context.engine")
    home.mkdir(parents=True, exist_ok=True)
    _atomic_yaml(home / "config.yaml", config)
    return {"config": str(home / "config.yaml"), "changed": changed, "previous_engine": previous_engine}


def install(home: Path, *, select: bool = False, link: bool = False) -> dict[str, Any]:
    """The ``baton hermes install --json`` result."""
    written = write_plugin_dir(home, link=link)
    selected = select_engine(home) if select else None
    next_steps = [] if select else [
        f"hermes plugins enable {PLUGIN_NAME}", f"set context.engine: {ENGINE_NAME} in {home / 'config.yaml'}"]
    return {"ok": True, "hermes_home": str(home), "plugin_dir": written["path"], "linked": written["linked"],
            "selected": selected, "next_steps": next_steps}


def uninstall(home: Path) -> dict[str, Any]:
    """The ``baton hermes uninstall --json`` result: Hermes back on its built-in compressor, offline.

    Removes ``baton`` from ``plugins.enabled``, sets ``context.engine: compressor`` when it was ``baton`` and deletes
    the plugin directory this installer wrote (a foreign one is refused). Never touches the ``baton:`` block (a later
    install finds the settings as they were) nor any project's ``.baton/``. Needed on Hermes 0.22+, whose ``hermes
    plugins disable`` goes through the plugin manager's admission (a managed Python download)."""
    config = read_config_file(home)
    changed = []
    plugins = config.get("plugins")
    if isinstance(plugins, dict) and isinstance(plugins.get("enabled"), list) and PLUGIN_NAME in plugins["enabled"]:
        plugins["enabled"] = [name for name in plugins["enabled"] if name != PLUGIN_NAME]
        changed.append("plugins.enabled")
    context = config.get("context")
    if isinstance(context, dict) and context.get("engine") == ENGINE_NAME:
        context["engine"] = "compressor"
        changed.append("context.engine")
    if changed:
        _atomic_yaml(home / "config.yaml", config)
    target = plugin_target(home)
    removed = None
    if target.is_symlink():
        target.unlink()
        removed = str(target)
    elif target.exists():
        if not target.is_dir() or set(p.name for p in target.iterdir()) - {*TEMPLATE_FILES, "__pycache__"}:
            raise ConflictError(f"{target} holds other files; Baton was turned off in config.yaml, remove the "
                                "directory by hand")
        shutil.rmtree(target)
        removed = str(target)
    return {"ok": True, "hermes_home": str(home), "config": str(home / "config.yaml"), "changed": changed,
            "removed": removed, "kept": "the baton: block in config.yaml and every project's .baton/"}
