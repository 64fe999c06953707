"""The REAL Hermes loop with Baton's core failing under every hook: the conversation completes (issue 33 item 3).

Every method of the engine's collaborators raises (``batontest.failing_core``): the estimators, the middleware,
``should_compress``, ``update_from_response`` (inside Hermes' API try, where a fault reads as a provider error),
the Baton tools' schemas and status. Hermes must go on as with its built-in's answers: both turns end with the model's
reply, and the engine says each kind of fault once and counts them in status.
config.yaml sets ``max_tokens: 4096``: with the middleware failing the request goes out as Hermes built it, and
Hermes' own 65,536 cap for this model on a 65,536 window is refused for the built-in compressor too (the demo's
first arm).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.hermes_run import run_scenario
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script

pytestmark = pytest.mark.hermes


def test_the_conversation_completes_with_a_failing_core(tmp_path: Path) -> None:
    with ModelServer(ScriptedPolicy(tool_heavy_script(3, capture_every=2), final_answer="ok")) as server:
        run = run_scenario(tmp_path, server, turns=("Track the tasks.", "And once more."),
                           baton={"tokenizer": {"backend": "rough"}}, fail_core=True, max_tokens=4096)
    result = run.result
    assert result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine", run.stderr[-2000:]
    assert [(t["final_response"], t["completed"]) for t in result["turns"]] == [("ok", True), ("ok", True)]
    assert not server.rejections and len(server.main_requests) >= 6
    errors = result["status"]["internal_errors"]
    faults = {kind.split(": ")[0] for kind in errors if kind.endswith(": CoreFault")}
    assert {"update_from_response", "should_compress_info", "llm_request middleware", "response usage", "exact estimate",
            "get_tool_schemas", "on_session_start", "update_model"} <= faults, errors
    assert result["status"]["status_error"] == "internal_error"
    # no Baton tools offered (the built-in has none): the model's baton_capture calls got Hermes' own answer
    assert [m for m in result["final_messages"] if m.get("role") == "tool" and "baton_capture" in str(m["content"])]
    assert "Traceback" not in run.stderr
