"""The README's install path for the installed Hermes line, run as written, then a real ``AIAgent`` turn with Baton;
0.22's plugin manager refusing offline, with doctor naming the way out; upgrading and turning Baton off.

Every Hermes command runs as the installed ``hermes`` CLI in its own process, with no download possible (a closed
proxy port): the machine these run on has no internet, and CI must not depend on it either.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from batontest.hermes_run import require_hermes
from batontest.model_server import ModelServer, ScriptedPolicy
from batontest.readme_paths import (
    README_MODEL,
    REPO,
    agent_turn,
    doctor,
    hermes_line,
    merge_config,
    readme_config,
    run_lines,
    section,
    shell_blocks,
    tree_bytes,
    user_env,
    user_project,
)

from baton_engine.hermes.config import installed_hermes_version

WINDOW = 65536
# the plugin.yaml `baton hermes install` copied up to 40a0568 (before the manifest was generated), as an upgrade finds it
OLDER_MANIFEST = """name: baton
version: "0.1.0"
description: "Baton context engine: every compaction becomes a validated handoff; exact token budgets."
author: "Baton"
kind: standalone
"""
BATON_ENGINE = "baton_engine.hermes.engine.BatonContextEngine"
BUILTIN = "agent.context_compressor.ContextCompressor"
REFUSED = "python: install failed"


def _version() -> str:
    require_hermes()
    version = installed_hermes_version()
    assert version is not None
    return version


def _server() -> ModelServer:
    """The README's server (an OpenAI-compatible vLLM with /tokenize, serving Qwen/Qwen3-8B), on loopback."""
    return ModelServer(ScriptedPolicy([], final_answer="Hello back."), context_window=WINDOW, model_name=README_MODEL,
                       counts_for_itself=True)


def _readme_path(tmp_path: Path, server: ModelServer) -> tuple[Path, Path, dict[str, str]]:
    """The README's commands for this Hermes line (bash, from the directory holding your-project), then its
    config.yaml merged into $HERMES_HOME/config.yaml; returns (home, project, env)."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    project = user_project(tmp_path)
    env = user_env(home)
    block = shell_blocks(hermes_line(_version()))[0]  # the path; 0.22's second block is the plugin manager's
    done = run_lines(block, tmp_path, env)
    assert done.returncode == 0, f"{block}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    merge_config(home, readme_config(server.url))
    return home, project, env


def test_the_readme_pip_line_is_what_built_this_environment() -> None:
    """The pip line cannot run here as written (it resolves build requirements from an index); what it installs is
    what this environment has: each ``-e`` target editable from this checkout, as tox installs it."""
    [[line]] = [block for block in shell_blocks("Enabling it in Hermes") if block[0].startswith("python -m pip")]
    targets = [word.split("[")[0] for word in shlex.split(line) if word not in ("python", "-m", "pip", "install",
                                                                                  "-e")]
    assert targets == [".", "backends/tiktoken", "backends/hf", "backends/vllm", "backends/llamacpp"]
    for target in targets:
        project = (REPO / target / "pyproject.toml").read_text(encoding="utf-8")
        name = re.search(r'^name = "([^"]+)"', project, re.M).group(1)
        origin = json.loads(metadata.distribution(name).read_text("direct_url.json") or "{}")
        assert origin.get("url") == (REPO / target).resolve().as_uri(), (name, origin)
        assert origin.get("dir_info", {}).get("editable") is True, (name, origin)


@pytest.mark.hermes
def test_the_readme_path_runs_a_real_turn_with_baton(tmp_path: Path) -> None:
    version = _version()
    block = shell_blocks(hermes_line(version))[0]
    if not version.startswith("0.19."):  # 0.22+: the path that works offline, never the plugin manager's enable
        assert not any("hermes plugins enable" in line for line in block), block
    with _server() as server:
        home, project, env = _readme_path(tmp_path, server)
        code, checks = doctor(project, env)
        assert checks["hermes.selection"]["status"] == "pass", checks["hermes.selection"]
        assert checks["hermes.tokenizer"]["status"] == "pass", checks["hermes.tokenizer"]
        assert checks["hermes.admission"]["status"] == ("skipped" if version.startswith("0.19.") else "pass")
        result = agent_turn(tmp_path, project, env, server.base_url, "first")
    assert result["engine_class"] == BATON_ENGINE and result["engine_name"] == "baton"
    assert result["turns"][0]["final_response"] == "Hello back." and result["turns"][0]["completed"]
    assert result["status"]["tokenizer"]["counting"] == "exact", result["status"]["tokenizer"]
    assert server.tokenize_requests > 0 and not server.rejections
    assert (project / ".baton").is_dir()


@pytest.mark.hermes
def test_the_plugin_manager_refuses_offline_and_doctor_names_the_way_out(tmp_path: Path) -> None:
    """0.22: `hermes plugins enable baton` stops at the managed Python download and changes nothing; doctor says so and
    names `baton hermes install --select`, which works."""
    version = _version()
    if version.startswith("0.19."):
        pytest.skip("0.19 has no plugin admission: its `hermes plugins enable` is the README's 0.19 path, run above")
    home = tmp_path / "hermes-home"
    home.mkdir()
    project = user_project(tmp_path)
    env = user_env(home)
    merge_config(home, readme_config("http://127.0.0.1:9"))  # context.engine: baton, Baton not enabled yet
    before = (home / "config.yaml").read_bytes()
    enable = subprocess.run(["hermes", "plugins", "enable", "baton"], cwd=project, env=env, text=True,
                            capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    assert enable.returncode != 0 and "AdmissionRefused" in enable.stderr and REFUSED in enable.stderr, \
        enable.stdout[-1000:] + enable.stderr[-2000:]
    assert (home / "config.yaml").read_bytes() == before
    code, checks = doctor(project, env)
    assert code == 3
    for name in ("hermes.selection", "hermes.admission"):
        assert checks[name]["status"] == "fail" and "`baton hermes install --select`" in checks[name]["detail"]
    assert "AdmissionRefused: python: install failed" in checks["hermes.admission"]["detail"]
    block = shell_blocks("Hermes 0.22 and later")[0]
    assert run_lines(block, tmp_path, env).returncode == 0
    _code, checks = doctor(project, env)
    assert checks["hermes.selection"]["status"] == "pass" and checks["hermes.admission"]["status"] == "pass"


@pytest.mark.hermes
def test_the_plugin_managers_git_install_stops_at_the_managed_python_offline(tmp_path: Path) -> None:
    """0.22: the README's `hermes plugins install <git url>#baton_engine/hermes/plugin_dir` (here a file:// URL of this
    checkout: its HEAD is cloned) clones, then is refused at the managed Python download, leaving nothing behind."""
    version = _version()
    if version.startswith("0.19."):
        pytest.skip("the README gives `hermes plugins install <git url>#subdir` for 0.22+ only")
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a git checkout: the README's `hermes plugins install <git url>` needs one to clone")
    home = tmp_path / "hermes-home"
    home.mkdir()
    env = user_env(home)
    [[install]] = [block for block in shell_blocks("Hermes 0.22 and later") if "plugins install" in block[0]]
    command = install.replace("<git-url-of-baton>", REPO.as_uri())
    installed = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, text=True, capture_output=True,
                               timeout=300, stdin=subprocess.DEVNULL, check=False)
    said = " ".join((installed.stdout + installed.stderr).split())
    assert installed.returncode != 0 and "Cloning" in said and f"was not published: {REFUSED}" in said, said[-2000:]
    assert not (home / "plugins" / "baton").exists() and not (home / "config.yaml").exists()


def _upgrade_and_uninstall_lines() -> tuple[str, str]:
    [block] = shell_blocks("Upgrading, turning it off")
    upgrade, uninstall = (line.split("#")[0].strip() for line in block)
    assert upgrade == "baton hermes install --select" and uninstall == "baton hermes uninstall"
    return upgrade, uninstall


@pytest.mark.hermes
def test_an_upgrade_keeps_settings_and_data_and_uninstall_leaves_hermes_on_its_compressor(tmp_path: Path) -> None:
    upgrade, uninstall = _upgrade_and_uninstall_lines()
    with _server() as server:
        home, project, env = _readme_path(tmp_path, server)
        assert agent_turn(tmp_path, project, env, server.base_url, "first")["engine_class"] == BATON_ENGINE
        # the older Baton's copy of the plugin directory (an install before the upgrade), as a pip upgrade leaves it
        assert run_lines(["baton hermes install"], project, env).returncode == 0
        (home / "plugins" / "baton" / "plugin.yaml").write_text(OLDER_MANIFEST)
        settings, data = yaml.safe_load((home / "config.yaml").read_text())["baton"], tree_bytes(project / ".baton")
        assert settings["fresh_tail_tokens"] == 6000 and data
        _code, checks = doctor(project, env)
        assert checks["hermes.plugin_dir"]["status"] == "fail" and "another Baton version" in \
            checks["hermes.plugin_dir"]["detail"]
        assert run_lines([upgrade], project, env).returncode == 0
        _code, checks = doctor(project, env)
        assert checks["hermes.plugin_dir"]["status"] == "pass" and checks["hermes.selection"]["status"] == "pass"
        assert yaml.safe_load((home / "config.yaml").read_text())["baton"] == settings
        assert tree_bytes(project / ".baton") == data
        assert agent_turn(tmp_path, project, env, server.base_url, "upgraded")["engine_class"] == BATON_ENGINE

        done = run_lines([uninstall], project, env)
        assert done.returncode == 0, done.stderr
        config = yaml.safe_load((home / "config.yaml").read_text())
        assert config["context"]["engine"] == "compressor" and "baton" not in config["plugins"]["enabled"]
        assert config["baton"] == settings and not (home / "plugins" / "baton").exists()
        data_after = tree_bytes(project / ".baton")
        assert all(data_after.get(name) == content for name, content in data.items()), "uninstall changed .baton/"
        hermes_says = subprocess.run(["hermes", "config", "get", "context.engine"], cwd=project, env=env, text=True,
                                     capture_output=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert hermes_says.returncode == 0 and hermes_says.stdout.strip().splitlines()[-1] == "compressor", \
            hermes_says.stdout
        listed = subprocess.run(["hermes", "plugins", "list", "--plain", "--no-bundled"], cwd=project, env=env,
                                text=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        [row] = [line for line in listed.stdout.splitlines() if line.split()[-1:] == ["baton"]]
        assert row.startswith("not enabled"), listed.stdout  # the pip entry point stays, off
        _code, checks = doctor(project, env)
        assert checks["hermes.selection"]["status"] == "skipped"
        assert "Hermes uses its built-in compressor" in checks["hermes.selection"]["detail"]
        off = agent_turn(tmp_path, project, env, server.base_url, "removed")
    # the built-in compressor is the engine (its answer is not asserted: on 0.19 Hermes' own 65,536 output default
    # is refused by this strict server with no Baton to lower it, the README's first table row)
    assert off["engine_class"] == BUILTIN and off["engine_name"] != "baton"
    offered = {(tool.get("function") or {}).get("name") for tool in server.main_requests[-1].tools or []}
    assert "baton_status" not in offered, sorted(offered)
