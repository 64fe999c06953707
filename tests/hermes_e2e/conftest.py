"""End-to-end fixtures: a loopback model server, a temp HERMES_HOME, a git project, and the REAL
Hermes ``AIAgent`` run in a subprocess (``driver.py``) with Baton loaded through its pip entry point."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from batontest import schemas
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.model_server import ModelServer

DRIVER = Path(__file__).with_name("driver.py")
MODEL = "qwen3-local"
WINDOW = 65536
# Words only the transcript has: every line of a scripted tool payload starts like "r3i1 L004:".
TRANSCRIPT_LINE = re.compile(r"r\d+i\d+ L\d{3}:")
TRANSCRIPT_KEYS = {"messages", "transcript", "conversation", "tool_calls", "tool_call_id"}


def require_hermes() -> None:
    """Skip without hermes-agent (other tox envs); fail when Hermes is there but Baton's entry point is not."""
    if importlib.util.find_spec("run_agent") is None:  # find, not import: Hermes must not load in this process
        pytest.skip("needs hermes-agent==0.19.0 in this environment (tox env hermes)")
    if not any(ep.name == "baton" for ep in entry_points(group="hermes_agent.plugins")):
        pytest.fail("hermes-agent is installed but baton-engine's hermes_agent.plugins entry point is not: "
                    "pip install -e . in this environment")


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
        return sorted((self.project / ".baton" / "handoffs").glob("*.json"))

    def handoffs(self) -> list[dict[str, Any]]:
        return [json.loads(path.read_text(encoding="utf-8")) for path in self.handoff_files]

    def baton_bytes(self) -> list[tuple[Path, bytes]]:
        """Every file under ``.baton/`` (records, index, cache, config), as bytes."""
        root = self.project / ".baton"
        return [(p, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()] if root.exists() else []


def run_scenario(workdir: Path, server: ModelServer, *, turns: Sequence[str], baton: Mapping[str, Any] | None = None,
                 init: bool = True, engine: str = "baton", max_tokens: int = WINDOW,
                 max_iterations: int = 60) -> Scenario:
    """Write HERMES_HOME and a git project under ``workdir``, then run ``turns`` through the real AIAgent."""
    require_hermes()
    home = write_hermes_home(workdir / "hermes-home", hermes_config(
        base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=max_tokens,
        engine=engine, baton=baton))
    project = git_project(workdir / "project", {"README.md": "# inventory service\n",
                                                "src/parser.py": "def parse(line):\n    return line.split()\n"})
    if init:
        baton_init(project)
    spec_path, out_path = workdir / "spec.json", workdir / "out.json"
    spec = {"base_url": server.base_url, "model": MODEL, "turns": list(turns), "max_iterations": max_iterations}
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    done = subprocess.run([sys.executable, str(DRIVER), str(spec_path), str(out_path)], cwd=project,
                          env=hermes_env(home), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(out_path.read_text(encoding="utf-8"))
    return Scenario(result, project, home, done.returncode, done.stderr)


@pytest.fixture(scope="session")
def reference_validator() -> jsonschema.Draft7Validator:
    return schemas.reference_validator()


def transcript_keys(value: Any) -> set[str]:
    """Keys anywhere in a record that would mean a transcript was persisted."""
    if isinstance(value, dict):
        found = {k for k in value if k in TRANSCRIPT_KEYS}
        for child in value.values():
            found |= transcript_keys(child)
        return found
    if isinstance(value, list):
        return set().union(*(transcript_keys(child) for child in value)) if value else set()
    return set()
