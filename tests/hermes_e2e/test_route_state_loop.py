"""A switch back to a route finds its state, in the REAL Hermes loop (issue 33 item 1).

The real ``AIAgent`` reads design files from server A, which reports ``usage.prompt_tokens`` 1.25x what its
(and Baton's) Qwen3 tokenizer counts: A's counts calibrate. Hermes' own ``AIAgent.switch_model`` (what ``/model``
calls) moves it to server B (reporting its true count) and back to A. At 9dba563 the switch back started a new
ledger: A came back ``unconfirmed``, ratio 1.0, its responses forgotten. Now each route's ledger is kept for a
switch back (``RouteLedgers``, ``route_states``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.assets import qwen3_dir
from batontest.model_server import ModelServer, Reply, ScriptedPolicy, ToolCall
from batontest.reading import run_reading

pytestmark = pytest.mark.hermes

WINDOW = 65_536
SCALE = 1.25  # A's provider counts 1.25 tokens for each of Baton's
TURNS = ("Read design files 1 to 3 under docs/ one by one.", "Now read design file 4.", "Thanks, that is all.")


def reads(project: Path, numbers: tuple[int, ...], done: str) -> ScriptedPolicy:
    steps = [Reply(content=f"Reading design file {n}.",
                   tool_calls=(ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),))
             for n in numbers]
    return ScriptedPolicy(steps, final_answer=done)


def test_a_switch_back_keeps_the_routes_calibration(tmp_path: Path) -> None:
    project = tmp_path / "project"
    with ModelServer(reads(project, (1, 2, 3), "Read."), context_window=WINDOW, prompt_scale=SCALE) as first, \
            ModelServer(reads(project, (4,), "Read."), context_window=WINDOW, model_name="other-model",
                        call_id_tag="b") as other:
        result, _home, _wall = run_reading(
            tmp_path, first, files=4, file_words=300, context_length=WINDOW, max_tokens=None,
            baton={"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}, "auto_checkpoint_on_end": False},
            turns=TURNS, hermes={"agent": {"minimum_tool_context_length": 32_768}},
            switches=[{"before_turn": 1, "model": "other-model", "base_url": other.base_url, "provider": "custom"},
                      {"before_turn": 2, "model": first.model_name, "base_url": first.base_url,
                       "provider": "custom"}])
    checks = [turn["status"]["verification"] for turn in result["turns"]]
    figures = "\n".join(f"after turn {n}: {c['verdict']} ratio={c['ratio']} seen={c['requests_seen']}"
                        for n, c in enumerate(checks))
    print(figures)
    assert [t["final_response"] for t in result["turns"]] == ["Read."] * 3, figures
    on_a = len(first.main_requests)
    assert on_a >= 5 and len(other.main_requests) >= 2, figures  # 4 on A before the switch, at least 1 after
    assert checks[0]["verdict"] == "calibrated" and checks[0]["ratio"] == pytest.approx(SCALE, abs=0.02), figures
    assert checks[1]["verdict"] != "calibrated" and checks[1]["ratio"] == pytest.approx(1.0, abs=0.02), figures
    # back on A: its calibration and every response it saw before the switch are still there
    assert checks[2]["verdict"] == "calibrated" and checks[2]["ratio"] == pytest.approx(SCALE, abs=0.02), figures
    assert checks[2]["requests_seen"] == on_a, figures
