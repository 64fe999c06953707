"""A reasoning-model route in the real loop: Hermes sends ``max_completion_tokens`` (the 65,536 of its name
table), the strict server refuses ``max_tokens`` the way OpenAI does, and Baton lowers the field Hermes
used without ever adding the one the provider rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.hermes_run import WINDOW, run_scenario
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script, unsupported_parameter

pytestmark = pytest.mark.hermes
MODEL = "o3-mini"


def test_the_strict_server_refuses_max_tokens_for_reasoning_models() -> None:
    assert unsupported_parameter({"model": MODEL, "max_tokens": 10}) is not None
    assert unsupported_parameter({"model": "gpt-5-mini", "max_tokens": 10}) is not None
    assert unsupported_parameter({"model": MODEL, "max_completion_tokens": 10}) is None
    assert unsupported_parameter({"model": "qwen3-local", "max_tokens": 10}) is None


def test_baton_lowers_max_completion_tokens_and_never_adds_max_tokens(tmp_path: Path) -> None:
    with ModelServer(ScriptedPolicy(tool_heavy_script(3), final_answer="ok"), model_name=MODEL) as server:
        run = run_scenario(tmp_path, server, turns=("Track the tasks.",), model=MODEL, max_tokens=None,
                           baton={"tokenizer": {"backend": "rough"}, "auto_checkpoint_on_end": False})
    assert not server.rejections, [r.rejection for r in server.rejections]
    main = server.main_requests
    assert len(main) >= 3 and all(r.max_tokens is None for r in main)  # never added
    assert all(r.max_completion_tokens is not None and r.prompt_tokens + r.max_completion_tokens <= WINDOW
               for r in main)
    assert any(r.max_completion_tokens < 65536 for r in main)  # Hermes' 65,536 was lowered to what fits
    assert run.result["status"]["output_budget"]["last_action"] == "lower_cap_to"
    assert run.result["turns"][0]["final_response"] == "ok"
