"""`baton doctor` asks the model server for its window and the installed Hermes for its minimum (issue 31 item 3).

Real parts: the `baton` CLI as a process, a loopback vLLM-like server stating its ``max_model_len`` in /v1/models
(``ModelServer(counts_for_itself=True)``), and the installed Hermes (0.19 or 0.22) whose own code gives the floor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from batontest.hermes_home import hermes_config
from batontest.model_server import ModelServer, ScriptedPolicy
from batontest.ollama_standin import MODEL as OLLAMA_MODEL
from batontest.ollama_standin import OllamaStandin

from baton_engine.hermes.minimum import hermes_minimum

HERMES_MINIMUM = 64_000  # agent/model_metadata.py MINIMUM_CONTEXT_LENGTH in 0.19 and the 0.22 default


def doctor(home: Path, project: Path) -> tuple[int, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env["HERMES_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", "from baton_engine.cli import main; main()", "doctor", "--json"],
                          capture_output=True, text=True, timeout=180, env=env, cwd=project)
    return done.returncode, json.loads(done.stdout)


def window_row(result: dict[str, Any]) -> dict[str, str]:
    return next(check for check in result["checks"] if check["name"] == "hermes.window")


def write_home(home: Path, server: ModelServer, context_length: int, **agent: Any) -> None:
    config = hermes_config(base_url=server.base_url, model=server.model_name, context_length=context_length)
    if agent:
        config["agent"] = agent
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def test_the_installed_hermes_states_its_minimum() -> None:
    found = hermes_minimum({})
    assert found is not None and found.tokens == HERMES_MINIMUM
    lowered = hermes_minimum({"agent": {"minimum_tool_context_length": 16_384}})
    if found.setting is None:  # 0.19: fixed, the setting changes nothing
        assert lowered == found
    else:  # 0.22: Hermes' own getter reads agent.minimum_tool_context_length
        assert lowered is not None and lowered.tokens == 16_384


def test_config_larger_than_the_server_fails_with_what_to_set(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptedPolicy([]), context_window=16_384, counts_for_itself=True) as server:
        write_home(home, server, 32_768, minimum_tool_context_length=16_384)
        code, result = doctor(home, project)
    row = window_row(result)
    assert code != 0 and not result["ok"] and row["status"] == "fail"
    assert "model.context_length 32,768 is larger than the window the server serves (16,384, vllm server)" \
        in row["detail"]
    assert "set model.context_length: 16384" in row["detail"]


def test_an_ollama_that_runs_the_model_with_its_default_window_fails_with_the_figure(tmp_path: Path,
                                                                                    project: Path) -> None:
    """config.yaml says 65,536 (what Hermes' ollama_num_ctx asks over /v1, which Ollama ignores); Ollama's /api/ps
    says the loaded model runs with 4,096: doctor fails with both figures."""
    home = tmp_path / "home"
    with OllamaStandin() as server:
        config = hermes_config(base_url=server.base_url, model=OLLAMA_MODEL, context_length=65_536)
        home.mkdir()
        (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        code, result = doctor(home, project)
    row = window_row(result)
    assert code != 0 and row["status"] == "fail"
    assert ("model.context_length 65,536 is larger than the window the server serves (4,096, Ollama (context_length "
            "of the loaded model, /api/ps))") in row["detail"]


def test_a_window_below_hermes_minimum_fails_and_says_how_this_version_lowers_it(tmp_path: Path,
                                                                                 project: Path) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptedPolicy([]), context_window=32_768, counts_for_itself=True) as server:
        write_home(home, server, 32_768)
        code, result = doctor(home, project)
    row = window_row(result)
    assert code != 0 and row["status"] == "fail"
    assert f"the window 32,768 is below Hermes" in row["detail"] and f"minimum {HERMES_MINIMUM:,}" in row["detail"]
    assert "agent.minimum_tool_context_length: 32768" in row["detail"]


def test_agreeing_windows_pass(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptedPolicy([]), context_window=65_536, counts_for_itself=True) as server:
        write_home(home, server, 65_536)
        _code, result = doctor(home, project)
    row = window_row(result)
    assert row["status"] == "pass", row
    assert "model.context_length 65,536; the server serves 65,536 (vllm server)" in row["detail"]
    rows = {check["name"]: check for check in result["checks"]}  # the settings are listed once, not twice
    assert "fresh_tail_tokens=" in rows["settings"]["detail"]
    assert rows["hermes.settings"]["detail"].endswith("in Hermes: the values of the settings row")


def test_a_small_window_with_hermes_022_s_setting_passes_only_there(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptedPolicy([]), context_window=16_384, counts_for_itself=True) as server:
        write_home(home, server, 16_384, minimum_tool_context_length=16_384)
        _code, result = doctor(home, project)
    row = window_row(result)
    fixed = hermes_minimum({}).setting is None  # type: ignore[union-attr]
    assert row["status"] == ("fail" if fixed else "pass"), row
    if fixed:
        assert "fixed minimum 64,000" in row["detail"]
