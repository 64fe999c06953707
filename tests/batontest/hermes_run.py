"""One real Hermes session in a subprocess (``tests/hermes_e2e/driver.py``) against a loopback model server.

Why: the hermes-e2e scenarios and the MCP round trip run the same thing (a temp HERMES_HOME, a git
project, the real ``AIAgent`` with Baton loaded through its pip entry point); the test process
itself never imports Hermes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.model_server import ModelServer
from batontest.records import handoff_files, handoff_records

DRIVER = Path(__file__).resolve().parents[1] / "hermes_e2e" / "driver.py"
MODEL = "qwen3-local"
WINDOW = 65536
PROJECT_FILES = {"README.md": "# inventory service\n", "src/parser.py": "def parse(line):\n    return line.split()\n"}


def require_hermes() -> None:
    """Skip without hermes-agent (other tox envs) unless BATON_REQUIRE_HERMES=1; fail when Hermes is
    there but Baton's entry point is not."""
    if importlib.util.find_spec("run_agent") is None:  # find, not import: Hermes must not load in this process
        message = "needs hermes-agent==0.19.0 in this environment (tox env hermes)"
        if os.environ.get("BATON_REQUIRE_HERMES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    if not any(ep.name == "baton" for ep in entry_points(group="hermes_agent.plugins")):
        pytest.fail("hermes-agent is installed but baton-engine's hermes_agent.plugins entry point is not: "
                    "pip install -e . in this environment")
    assert DRIVER.is_file(), f"the hermes-e2e driver is missing at {DRIVER}"


@dataclass
class Scenario:
    """One finished Hermes run: what the driver saw, plus the files it left behind."""

    result: dict[str, Any]
    project: Path
    home: Path
    returncode: int
    stderr: str

    @property
    def handoff_files(self) -> list[Path]:
        return handoff_files(self.project)

    def handoffs(self) -> list[dict[str, Any]]:
        return handoff_records(self.project)

    def baton_bytes(self) -> list[tuple[Path, bytes]]:
        """Every file under ``.baton/`` (records, index, cache, config), as bytes."""
        root = self.project / ".baton"
        return [(p, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()] if root.exists() else []


def run_scenario(workdir: Path, server: ModelServer, *, turns: Sequence[str], baton: Mapping[str, Any] | None = None,
                 init: bool = True, engine: str = "baton", max_tokens: int | None = WINDOW, max_iterations: int = 60,
                 toolsets: Sequence[str] | None = None, timeout: float = 240, model: str = MODEL,
                 fail_core: bool = False, scrape: str | None = None) -> Scenario:
    """Write HERMES_HOME and a git project (``PROJECT_FILES``) under ``workdir``, then run ``turns`` through
    the real AIAgent; ``toolsets`` None keeps the driver's default (todo, context_engine); ``fail_core``: every
    way of Baton's hooks into its core raises (``batontest.failing_core``); ``scrape``: a URL the driver reads after
    the last turn (``result["scraped"]``), while Hermes still runs."""
    require_hermes()
    home = write_hermes_home(workdir / "hermes-home", hermes_config(
        base_url=server.base_url, model=model, context_length=WINDOW, max_tokens=max_tokens,
        engine=engine, baton=baton))
    project = git_project(workdir / "project", PROJECT_FILES)
    if init:
        baton_init(project)
    spec_path, out_path = workdir / "spec.json", workdir / "out.json"
    spec: dict[str, Any] = {"base_url": server.base_url, "model": model, "turns": list(turns),
                            "max_iterations": max_iterations}
    if toolsets is not None:
        spec["toolsets"] = list(toolsets)
    if fail_core:
        spec["fail_core"] = True
    if scrape:
        spec["scrape"] = scrape
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    done = subprocess.run([sys.executable, str(DRIVER), str(spec_path), str(out_path)], cwd=project,
                          env=hermes_env(home), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(out_path.read_text(encoding="utf-8"))
    return Scenario(result, project, home, done.returncode, done.stderr)
