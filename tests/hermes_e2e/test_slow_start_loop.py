"""No agent waits for another's tokenizer, through two REAL Hermes agents in one process (``slow_start_driver.py``).

Agent S is on a route (a ``tokenizer_routes`` entry) whose tokenizer start is held; agent F, on the configured
Qwen3 route, runs a whole turn meanwhile, counting exactly, and S's turn ends once its tokenizer is up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import MODEL, PROJECT_FILES, WINDOW, require_hermes
from batontest.model_server import ModelServer, ScriptedPolicy

pytestmark = pytest.mark.hermes
DRIVER = Path(__file__).with_name("slow_start_driver.py")
SLOW_MODEL = "slow-start-model"
QUICK_TURN_SECONDS = 30.0  # F's turn on a loaded 2-core machine; the held start lasts 60 s


def test_an_agent_finishes_its_turn_while_another_agents_tokenizer_starts(tmp_path: Path) -> None:
    require_hermes()
    with ModelServer(ScriptedPolicy([], final_answer="Hello."), context_window=WINDOW) as server:
        assert server.count_prompt is not None  # the server's own tokenizer loaded before F's turn is timed
        tokenizer = {"backend": "hf", "path": str(qwen3_dir())}
        config = hermes_config(base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=4096,
                               baton={"tokenizer": tokenizer, "auto_checkpoint_on_end": False,
                                      # the held start is the point: once released, a backend that builds at once
                                      "tokenizer_routes": [{"match": {"model": SLOW_MODEL}, "backend": "rough",
                                                            "model": SLOW_MODEL, "context_length": WINDOW}]})
        home = write_hermes_home(tmp_path / "hermes-home", config)
        project = git_project(tmp_path / "project", PROJECT_FILES)
        baton_init(project)
        spec = {"base_url": server.base_url, "model": MODEL, "slow_model": SLOW_MODEL}
        (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        done = subprocess.run([sys.executable, str(DRIVER), str(tmp_path / "spec.json"), str(tmp_path / "out.json")],
                              cwd=project, env=hermes_env(home), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out["finals"] == {"F": "Hello.", "S": "Hello."}
    assert out["slow_still_starting"] and out["fast_seconds"] < QUICK_TURN_SECONDS, out
    assert out["fast_tokenizer"] == {"source": "hf:qwen3", "counting": "exact", "counter": "ready"}
    assert out["slow_tokenizer"]["counter"] == "ready" and out["slow_builds"] == 1
