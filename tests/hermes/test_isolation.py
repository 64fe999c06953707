"""A gateway agent's project is Hermes' terminal working directory (``terminal.cwd``), not the gateway process's:
its handoffs are written there, and its ``.baton/config.json`` layer is read.

Which conversation a handoff belongs to is the core's (``tests/agent_core/test_isolation.py``, through a fake host);
where Hermes' gateway runs an agent is Hermes' own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batontest.hermes_home import initialised_project
from batontest.records import handoff_records

from baton_engine.agent.runtime import set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.host import host_runtime

pytestmark = pytest.mark.hermes
CODENAME = "FALCON-7731"
USER_1 = "agent:main:telegram:dm:1001"
USER_1_WORDS = [{"role": "user", "content": f"My private codename is {CODENAME}. Review the eight parser files."},
                {"role": "assistant", "content": f"Reviewed the parser files for {CODENAME}."},
                {"role": "user", "content": "continue"}]


def test_a_gateway_agents_project_is_its_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway process runs elsewhere; ``terminal.cwd`` (``TERMINAL_CWD``) points the agent at the
    project: handoffs are written there and the project's ``.baton/config.json`` layer is read."""
    project = initialised_project(tmp_path / "work")
    config_path = project / ".baton" / "config.json"
    config = json.loads(config_path.read_text())
    config["brief"]["max_tokens"] = 700
    config_path.write_text(json.dumps(config))
    elsewhere = tmp_path / "gateway-process"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TERMINAL_CWD", raising=False)
    runtime = host_runtime(tmp_path / "home")  # the plugin starts before any agent: no project yet
    set_runtime(runtime)
    monkeypatch.setenv("TERMINAL_CWD", str(project))
    engine = BatonContextEngine()
    engine.update_model("qwen3", 65536)
    engine.on_session_start("s-gw", platform="telegram", conversation_id=USER_1)
    assert engine.project.settings().brief_max_tokens == 700
    engine.compress(USER_1_WORDS)
    assert engine.get_status()["latest_handoff"]["status"] == "ready"
    assert len(handoff_records(project)) == 1 and not (elsewhere / ".baton").exists()
