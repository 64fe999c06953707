"""`baton hermes install [--select] [--link]` through the real CLI, and what Hermes then loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hermes_cli.plugins import PluginManager

from baton_engine.hermes.engine import BatonContextEngine

pytestmark = pytest.mark.hermes


def baton(*args: str, env_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if env_home is not None:
        env["HERMES_HOME"] = str(env_home)
    return subprocess.run([sys.executable, "-c", "from baton_engine.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_install_without_select_never_activates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = baton("hermes", "install", "--hermes-home", str(home), "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["selected"] is None
    assert (home / "plugins" / "baton" / "plugin.yaml").is_file()
    assert not (home / "config.yaml").exists()
    assert "hermes plugins enable baton" in result["next_steps"]


def test_install_select_edits_only_the_two_keys_and_hermes_loads_it(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({
        "model": {"default": "m", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "context_length": 65536},
        "plugins": {"enabled": ["other"]}, "display": {"skin": "mono"}}))
    done = baton("hermes", "install", "--hermes-home", str(hermes_home), "--select", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["selected"]["changed"] == ["plugins.enabled", "context.engine"]
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["plugins"]["enabled"] == ["other", "baton"] and config["context"]["engine"] == "baton"
    assert config["display"] == {"skin": "mono"} and config["model"]["context_length"] == 65536
    again = json.loads(baton("hermes", "install", "--hermes-home", str(hermes_home), "--select", "--json").stdout)
    assert again["selected"]["changed"] == []
    manager = PluginManager()
    manager.discover_and_load()
    assert isinstance(manager._context_engine, BatonContextEngine)
    doctor = json.loads(baton("doctor", "--json", env_home=hermes_home).stdout)
    selection = next(c for c in doctor["checks"] if c["name"] == "hermes.selection")
    assert selection["status"] == "pass"


def test_select_takes_baton_out_of_plugins_disabled(tmp_path: Path) -> None:
    """0.19's `hermes plugins disable baton` lists it in plugins.disabled, which wins over plugins.enabled."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"plugins": {"enabled": [], "disabled": ["baton", "other"]},
                                                      "context": {"engine": "baton"}}))
    done = baton("hermes", "install", "--hermes-home", str(home), "--select", "--json")
    assert json.loads(done.stdout)["selected"]["changed"] == ["plugins.enabled", "plugins.disabled"]
    config = yaml.safe_load((home / "config.yaml").read_text())
    assert config["plugins"] == {"enabled": ["baton"], "disabled": ["other"]}
    doctor = json.loads(baton("doctor", "--json", env_home=home).stdout)
    assert next(c for c in doctor["checks"] if c["name"] == "hermes.selection")["status"] == "pass"


def test_link_and_foreign_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = baton("hermes", "install", "--hermes-home", str(home), "--link", "--json")
    target = home / "plugins" / "baton"
    assert done.returncode == 0 and target.is_symlink() and (target / "__init__.py").is_file()
    copied = baton("hermes", "install", "--hermes-home", str(home), "--json")  # replaces our own link
    assert copied.returncode == 0 and not target.is_symlink()
    (target / "notes.txt").write_text("mine")
    refused = baton("hermes", "install", "--hermes-home", str(home), "--json")
    assert refused.returncode == 4 or refused.returncode == 3
    assert "holds other files" in json.loads(refused.stdout)["error"]["message"]
    assert (target / "notes.txt").read_text() == "mine"


def test_bundled_skill_is_the_portable_skill() -> None:
    """One file, two places: the package's SKILL.md links to skills/baton/SKILL.md (the wheel stores its content)."""
    root = Path(__file__).resolve().parents[2]
    bundled = root / "baton_engine" / "hermes" / "SKILL.md"
    assert bundled.resolve() == (root / "skills" / "baton" / "SKILL.md").resolve()
    text = bundled.read_text()
    assert "context.engine" not in text and "hermes plugins" not in text  # vendor-neutral: MCP reuses it
