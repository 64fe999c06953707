"""Build a throw-away Hermes home (``HERMES_HOME`` with ``config.yaml``) and a git project for it.

Why: Hermes reads ``$HERMES_HOME/config.yaml`` (model endpoint, context engine, plugins) when an
``AIAgent`` is built, and module-level state means the variable must be set before any Hermes
import. These helpers write the files a user would write so the end-to-end tests and the demo
run the real agent loop against a loopback model server, offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from batontest.gitrepo import init_repo

HERMES_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HERMES_REDACT_SECRETS": "false",  # let a planted secret reach the engine: Baton must redact it itself
}


def hermes_config(
    *,
    base_url: str,
    model: str,
    context_length: int = 65536,
    max_tokens: int | None = 65536,
    engine: str = "baton",
    plugins_enabled: Sequence[str] = ("baton",),
    baton: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The config.yaml content: custom provider at ``base_url``, the chosen context engine, memory off
    (``max_tokens`` None: no ``model.max_tokens`` key, Hermes picks or omits the cap itself)."""
    model_block: dict[str, Any] = {"default": model, "provider": "custom", "base_url": base_url,
                                   "context_length": context_length}
    if max_tokens is not None:
        model_block["max_tokens"] = max_tokens
    config: dict[str, Any] = {
        "model": model_block,
        "context": {"engine": engine},
        "plugins": {"enabled": list(plugins_enabled)},
        "memory": {"memory_enabled": False, "user_profile_enabled": False},
        # every tool eager: Hermes 0.22 defers some (its todo tool) behind a tool_search bridge by default
        "tools": {"tool_search": {"enabled": "off"}},
    }
    if baton is not None:
        config["baton"] = dict(baton)
    return config


def write_hermes_home(home: Path, config: Mapping[str, Any]) -> Path:
    """Create ``home`` with ``config.yaml``; returns the home directory."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(dict(config), sort_keys=True), encoding="utf-8")
    return home


def hermes_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a process running Hermes against ``home`` (inherits PATH etc.)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "INCONTEXT_", "OPENAI_"))}
    env.update(HERMES_OFFLINE_ENV)
    env["HERMES_HOME"] = str(home)
    env.pop("HERMES_SAFE_MODE", None)
    if extra:
        env.update(extra)
    return env


def git_project(root: Path, files: Mapping[str, str] | None = None) -> Path:
    """A git repository with one commit (``files`` or a small README)."""
    return init_repo(root, files or {"README.md": "# demo project\n"})


DEMO_FILES = {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}


def initialised_project(root: Path, files: Mapping[str, str] | None = None) -> Path:
    """A git project (``files``, default ``DEMO_FILES``) with ``baton init`` done in-process through the
    operations layer, as the CLI does it (``baton_init`` runs the real CLI instead)."""
    from baton_engine.operations.handoffs import init

    git_project(root, files or DEMO_FILES)
    init(root)
    return root


def baton_init(project: Path, python: str | None = None) -> None:
    """Run ``baton init`` in ``project`` through the installed CLI entry (as a user would)."""
    command = "from baton_engine.cli import main; main()"
    subprocess.run([python or sys.executable, "-c", command, "init", "--json"], cwd=project,
                   check=True, capture_output=True, text=True)
