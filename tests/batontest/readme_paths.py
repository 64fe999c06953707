"""The README's install paths, as a user runs them: its shell blocks run by bash, its config.yaml merged in.

Why read the README and not restate it: the first command an operator types is the README's; a test of a copy would
keep passing after the page changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from batontest.hermes_home import git_project, hermes_env

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DRIVER = REPO / "tests" / "hermes_e2e" / "driver.py"
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
README_SERVER = "http://127.0.0.1:8000"  # the README's server; a test's loopback server stands in for it
README_MODEL = "Qwen/Qwen3-8B"
# no download can happen, with or without internet: the managed Python of 0.22's admission goes through these
NO_DOWNLOAD = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
               "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "127.0.0.1,localhost"}


def section(title: str) -> str:
    """The README text under the heading ``title`` (any level), up to the next heading of that level or above."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.M)
    assert match is not None, f"README has no heading {title!r}"
    level = len(match.group(1))
    rest = text[match.end():]
    end = re.search(rf"^#{{1,{level}}} ", FENCE.sub(lambda m: "x" * len(m.group(0)), rest), re.M)
    return rest[: end.start()] if end else rest


def shell_blocks(title: str) -> list[list[str]]:
    """The plain fenced blocks of a section, each as its lines."""
    return [match.group(2).splitlines() for match in FENCE.finditer(section(title)) if match.group(1) == ""]


def hermes_line(version: str) -> str:
    """The README heading of the install path for this Hermes version."""
    return "Hermes 0.19" if version.startswith("0.19.") else "Hermes 0.22 and later"


def readme_config(server_url: str) -> dict[str, Any]:
    """The README's config.yaml for both Hermes lines, pointed at ``server_url`` instead of port 8000."""
    for match in FENCE.finditer(section("The settings")):
        if match.group(1) == "yaml" and match.group(2).startswith("# Hermes 0.19 and 0.22"):
            return yaml.safe_load(match.group(2).replace(README_SERVER, server_url))
    raise AssertionError("README's settings section has no '# Hermes 0.19 and 0.22' config")


def merge_config(home: Path, addition: dict[str, Any]) -> None:
    """What a user does with the README's block: its keys into config.yaml, every other key kept."""
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for key, value in addition.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def user_env(home: Path) -> dict[str, str]:
    """A user's shell: this environment's ``baton`` and ``hermes`` on PATH, HERMES_HOME set, no download possible."""
    env = hermes_env(home, NO_DOWNLOAD)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_lines(lines: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The lines as one bash script (``cd`` carries over, as in a terminal); stops at the first failure."""
    return subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600, stdin=subprocess.DEVNULL, check=False)


def user_project(workdir: Path) -> Path:
    """``your-project``: a git project under ``workdir`` (the README runs ``cd your-project`` from there)."""
    return git_project(workdir / "your-project", {"README.md": "# inventory service\n"})


def doctor(project: Path, env: dict[str, str]) -> tuple[int, dict[str, dict[str, str]]]:
    """``baton doctor --json`` in the project: its exit code and its checks by name."""
    done = subprocess.run(["baton", "doctor", "--json"], cwd=project, env=env, text=True, capture_output=True,
                          timeout=300, check=False)
    return done.returncode, {check["name"]: check for check in json.loads(done.stdout)["checks"]}


def agent_turn(workdir: Path, project: Path, env: dict[str, str], base_url: str, name: str) -> dict[str, Any]:
    """One real ``AIAgent`` turn in the project (``tests/hermes_e2e/driver.py``), with what config.yaml selects."""
    spec, out = workdir / f"{name}-spec.json", workdir / f"{name}-out.json"
    spec.write_text(json.dumps({"base_url": base_url, "model": README_MODEL, "turns": ["Say hello"],
                                "max_iterations": 4}), encoding="utf-8")
    done = subprocess.run([sys.executable, str(DRIVER), str(spec), str(out)], cwd=project, env=env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
