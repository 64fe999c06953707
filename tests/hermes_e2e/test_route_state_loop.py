"""State kept per route, in the REAL Hermes loop (issue 33 items 1 and 4): a switch back finds its route's state, and
auxiliary calls verify their own route's counts, never the agent's.

The real ``AIAgent`` reads design files from server A, which reports ``usage.prompt_tokens`` 1.25x what its
(and Baton's) Qwen3 tokenizer counts: A's counts calibrate. Hermes' own ``AIAgent.switch_model`` (what ``/model``
calls) moves it to server B (reporting its true count) and back to A. At 9dba563 the switch back started a new
ledger: A came back ``unconfirmed``, ratio 1.0, its responses forgotten. Now each route's ledger is kept for a
switch back (``RouteLedgers``, ``route_states``).

On A the model also calls Hermes' ``vision_analyze`` twice on one image: Hermes' auxiliary client sends each to its
vision model (``auxiliary.vision``), server V, which reports 1.5x the count. Two calls are needed: a request with an
image verifies the text's scale only from the difference with the last request of the same image
(``RouteCheck._observe_media``), so V calibrates at ITS scale only because its ledger is kept between the calls, and
only because each reply's usage reaches it (``patches._auxiliary_reply``); A's verification never sees them. The
agent has its session database, as the hermes CLI and gateway give it: Hermes 0.22 runs the vision tool where no
frame holds the agent, and Baton finds its engine by the session Hermes publishes for its auxiliary accounting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.gateway_soak import SoakServer
from batontest.images import decodable_png
from batontest.model_server import ModelServer, Reply, ScriptedPolicy, ToolCall, filler_text
from batontest.reading import run_reading

pytestmark = pytest.mark.hermes

WINDOW = 65_536
SCALE = 1.25  # A's provider counts 1.25 tokens for each of Baton's
VISION_SCALE = 1.5  # V's, the auxiliary vision model's
VISION_MODEL = "vision-model"
TURNS = ("Read design files 1 to 3 under docs/ one by one.", "Now read design file 4.", "Thanks, that is all.")
QUESTIONS = ("What does the diagram show?", "What does the diagram show? " + filler_text("question", 300))


def read(project: Path, n: int) -> Reply:
    return Reply(content=f"Reading design file {n}.",
                 tool_calls=(ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),))


def look(image: Path, question: str) -> Reply:
    return Reply(content="Looking at the diagram.",
                 tool_calls=(ToolCall("vision_analyze", {"image_url": str(image), "question": question}),))


def test_route_state_is_kept_per_route_and_auxiliary_calls_verify_their_own(tmp_path: Path) -> None:
    project, image = tmp_path / "project", tmp_path / "assets" / "diagram.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(decodable_png(64, 48))
    on_a = ScriptedPolicy([read(project, 1), look(image, QUESTIONS[0]), read(project, 2), look(image, QUESTIONS[1]),
                           read(project, 3)], final_answer="Read.")
    with ModelServer(on_a, context_window=WINDOW, prompt_scale=SCALE) as first, \
            ModelServer(ScriptedPolicy([read(project, 4)], final_answer="Read."), context_window=WINDOW,
                        model_name="other-model", call_id_tag="b") as other, \
            SoakServer(ScriptedPolicy([], auxiliary_answer="A box and two arrows."), context_window=WINDOW,
                       model_name=VISION_MODEL, prompt_scale=VISION_SCALE, call_id_tag="v") as vision:
        baton: dict[str, Any] = {
            "tokenizer": {"backend": "hf", "path": str(qwen3_dir())}, "auto_checkpoint_on_end": False,
            "tokenizer_routes": [{"match": {"model": VISION_MODEL}, "backend": "hf", "path": str(qwen3_dir())}]}
        # no session title: Hermes 0.22 asks A's model for one in the background after the first turn, and its reply
        # would verify A's counts too, at a time the turns' statuses race with
        auxiliary = {"vision": {"provider": "custom", "model": VISION_MODEL, "base_url": vision.base_url,
                                "api_key": "sk-test"}, "title_generation": {"enabled": False}}
        result, _home, _wall = run_reading(
            tmp_path, first, files=4, file_words=300, context_length=WINDOW, max_tokens=None, baton=baton,
            turns=TURNS, hermes={"agent": {"minimum_tool_context_length": 32_768}, "auxiliary": auxiliary},
            toolsets=("file", "vision", "context_engine"), session_db=True,
            switches=[{"before_turn": 1, "model": "other-model", "base_url": other.base_url, "provider": "custom"},
                      {"before_turn": 2, "model": first.model_name, "base_url": first.base_url,
                       "provider": "custom"}])
    statuses = [turn["status"] for turn in result["turns"]]
    checks = [status["verification"] for status in statuses]
    kept = [{route["model"]: route for route in status["other_routes"]} for status in statuses]
    figures = "\n".join(f"after turn {n}: {c['verdict']} ratio={c['ratio']} seen={c['requests_seen']}; other routes "
                        f"{list(k.values())}" for n, (c, k) in enumerate(zip(checks, kept, strict=True)))
    print(figures)
    assert [t["final_response"] for t in result["turns"]] == ["Read."] * 3, figures
    on_a = len(first.main_requests)
    assert on_a >= 7 and len(other.main_requests) >= 2, figures  # 6 on A before the switch, at least 1 after
    assert len(vision.requests) == 2 and not vision.main_requests and not vision.rejections, figures
    assert not first.auxiliary_requests and not other.auxiliary_requests, figures  # every auxiliary call went to V
    assert checks[0]["verdict"] == "calibrated" and checks[0]["ratio"] == pytest.approx(SCALE, abs=0.02), figures
    assert checks[0]["requests_seen"] == 6 and checks[0]["media_requests"] == 0, figures  # A's own replies only
    # the vision model's route: its own state, kept between its two calls, calibrated at ITS scale
    assert kept[0][VISION_MODEL]["verdict"] == "calibrated", figures
    assert kept[0][VISION_MODEL]["ratio"] == pytest.approx(VISION_SCALE, abs=0.02), figures
    assert kept[0][VISION_MODEL]["requests_seen"] == 1, figures  # the text's scale from the two calls' difference
    assert checks[1]["verdict"] != "calibrated" and checks[1]["ratio"] == pytest.approx(1.0, abs=0.02), figures
    # back on A: its calibration and every response it saw before the switch are still there
    assert checks[2]["verdict"] == "calibrated" and checks[2]["ratio"] == pytest.approx(SCALE, abs=0.02), figures
    assert checks[2]["requests_seen"] == on_a, figures
    assert kept[2][VISION_MODEL] == kept[0][VISION_MODEL], figures
