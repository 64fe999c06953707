"""Tool parity: each engine tool answers with the JSON the equivalent `baton ... --json` command prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MESSAGES = [{"role": "user", "content": "Speed up the importer"},
            {"role": "assistant", "content": "Profiling shows the parser dominates."},
            {"role": "user", "content": "Go ahead"}]


def baton_cli(project: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", "from baton_engine.cli import main; main()", *args],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip(), done.stderr
    return done.stdout.strip()


def _engine(project: Path) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings()))
    engine = BatonContextEngine(project_dir=project)
    engine.on_session_start("tools-session")
    return engine


def _without(data: dict[str, Any], *volatile: str) -> dict[str, Any]:
    return {k: (_without(v, *volatile) if isinstance(v, dict) else v) for k, v in data.items() if k not in volatile}


def test_status_parity(project: Path) -> None:
    """The store's part is `baton status --json`; `engine` is what only the running engine knows."""
    engine = _engine(project)
    answer = json.loads(engine.handle_tool_call("baton_status", {}))
    engine_part = answer.pop("engine")
    assert answer == json.loads(baton_cli(project, "status", "--json"))
    assert set(engine_part) == {"route", "window", "counting", "trigger", "tools", "notices", "settings_ignored"}


def test_status_answers_route_window_counting_and_trigger(project: Path) -> None:
    engine = _engine(project)
    engine.update_model("qwen3-test", 32768, base_url="http://127.0.0.1:9/v1")
    part = json.loads(engine.handle_tool_call("baton_status", {}))["engine"]
    full = engine.get_status()
    assert part["route"]["model"] == "qwen3-test" and part["route"]["base_url"] == "http://127.0.0.1:9/v1"
    assert part["window"] == {"tokens": 32768, "source": "hermes context_length", "mismatch": None}
    assert part["counting"]["source"] == full["tokenizer"]["source"] == "rough" and part["counting"]["error"] is None
    assert part["trigger"]["threshold"] == engine.threshold_tokens and not part["trigger"]["stuck"]
    assert part["trigger"]["tokens"] == full["trigger"]["tokens"] > 0


def test_resume_parity_and_error_parity(project: Path) -> None:
    engine = _engine(project)
    missing_tool = json.loads(engine.handle_tool_call("baton_resume", {}))
    assert missing_tool == json.loads(baton_cli(project, "resume", "--json"))
    assert missing_tool["ok"] is False and missing_tool["error"]["kind"] == "not_found"
    engine.compress([*MESSAGES, {"role": "assistant", "content": "Done with step one."},
                     {"role": "user", "content": "Next"}])
    assert engine.get_status()["latest_handoff"]["status"] == "ready"
    tool = engine.handle_tool_call("baton_resume", {})
    assert tool == baton_cli(project, "resume", "--json")
    assert json.loads(tool)["brief"]["text"].startswith("# Resume brief")
    short = engine.get_status()["latest_handoff"]["short_id"]
    assert engine.handle_tool_call("baton_resume", {"ref": short, "max_tokens": 300}) == \
        baton_cli(project, "resume", short, "--max-tokens", "300", "--json")
    unknown = baton_cli(project, "resume", "nosuch", "--json")
    assert engine.handle_tool_call("baton_resume", {"ref": "nosuch"}) == unknown


@pytest.mark.parametrize(("kind", "cli_kind", "item"), [
    ("decision", "decision", {"decision": "stream the file", "rationale": "memory",
                              "alternatives_considered": ["mmap"]}),
    ("evidence", "evidence", {"type": "test", "claim": "parser is 3x faster", "ref": "pytest -k parser",
                              "result": "5 passed"}),
    ("failed_attempt", "failed-attempt", {"attempt": "regex parser", "outcome": "too slow"}),
    ("open_item", "open-item", {"description": "wire the CLI", "priority": "high", "suggested_action": "add flag",
                                "acceptance_check": "baton --help lists it"}),
])
def test_capture_parity_with_baton_record(project: Path, tmp_path: Path, kind: str, cli_kind: str,
                                          item: dict[str, Any]) -> None:
    engine = _engine(project)
    tool = json.loads(engine.handle_tool_call("baton_capture", {"kind": kind, "item": item}, messages=MESSAGES))
    assert tool["ok"], tool
    draft = tool["handoff"]["id"]
    item_file = tmp_path / "item.json"
    item_file.write_text(json.dumps(item))
    cli = json.loads(baton_cli(project, "record", cli_kind, draft, "--input", str(item_file), "--json"))
    assert list(tool) == list(cli)
    assert tool["handoff"]["id"] == cli["handoff"]["id"] and tool["kind"] == cli["kind"] == kind
    # the same item into the same draft: kept once (evidence may repeat), the answer names the item it has
    assert (tool["already_recorded"], cli["already_recorded"]) == (False, kind != "evidence")
    volatile = ("id", "made_at", "recorded_at", "captured_at", "updated_at")
    assert _without(tool["item"], *volatile) == _without(cli["item"], *volatile)
    assert tool["redactions"] == cli["redactions"] == []


def test_capture_input_errors_name_the_problem(project: Path) -> None:
    engine = _engine(project)
    bad = json.loads(engine.handle_tool_call("baton_capture", {"kind": "decision", "item": {"rationale": "no text"}},
                                             messages=MESSAGES))
    assert bad["ok"] is False and "decision" in bad["error"]["message"]
    assert json.loads(engine.handle_tool_call("baton_capture", {"kind": "gossip"}))["ok"] is False
    fresh = _engine(project)
    no_objective = json.loads(fresh.handle_tool_call("baton_capture", {"kind": "decision", "item": {"decision": "x"}}))
    assert no_objective["ok"] is False and "objective" in no_objective["error"]["message"]


def test_capture_without_a_project_advises_init(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    answer = json.loads(engine.handle_tool_call("baton_capture", {"kind": "decision", "item": {"decision": "x"}},
                                                messages=MESSAGES))
    assert answer["ok"] is False and "baton init" in answer["error"]["message"]


ITEMS = {
    "decision": {"decision": "stream the file", "rationale": "memory", "alternatives_considered": ["mmap"]},
    "evidence": {"type": "test", "claim": "parser is 3x faster", "ref": "pytest -k parser", "result": "5 passed"},
    "failed_attempt": {"attempt": "regex parser", "outcome": "too slow"},
    "open_item": {"description": "wire the CLI", "priority": "high", "suggested_action": "add flag"},
}


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_capture_accepts_nested_and_top_level_fields_alike(project: Path, kind: str) -> None:
    engine = _engine(project)
    nested = json.loads(engine.handle_tool_call("baton_capture", {"kind": kind, "item": ITEMS[kind]},
                                                messages=MESSAGES))
    flat = json.loads(engine.handle_tool_call("baton_capture", {"kind": kind, **ITEMS[kind]}, messages=MESSAGES))
    assert nested["ok"] and flat["ok"], (nested, flat)
    volatile = ("id", "made_at", "recorded_at", "captured_at")
    assert _without(nested["item"], *volatile) == _without(flat["item"], *volatile)
    assert flat["handoff"]["id"] == nested["handoff"]["id"]


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_capture_error_shows_the_expected_shape(project: Path, kind: str) -> None:
    from baton_engine.handoff import capture

    engine = _engine(project)
    bad = json.loads(engine.handle_tool_call("baton_capture", {"kind": kind, "colour": "blue"}, messages=MESSAGES))
    assert bad["ok"] is False and bad["error"]["kind"] == "input_error"
    assert "colour" in bad["error"]["message"]
    expected = bad["error"]["expected"]
    assert expected["kind"] == kind
    assert set(expected) - {"kind"} == set(capture.ITEM_MODELS[kind].model_fields)
    assert any(value.endswith("(required)") for value in expected.values())


def test_capture_schema_shows_each_kinds_main_fields_from_the_item_models() -> None:
    """Short (every request carries it): each kind's required field and its main ones, typed by the item models;
    the description names each shown field under its kind."""
    from baton_engine.agent.tools import SCHEMAS
    from baton_engine.handoff import capture

    schema = next(schema for schema in SCHEMAS if schema["name"] == "baton_capture")
    params = schema["parameters"]
    fields = {name for model in capture.ITEM_MODELS.values() for name in model.model_fields}
    shown = set(params["properties"]) - {"kind", "objective"}
    assert shown <= fields
    for kind, model in capture.ITEM_MODELS.items():
        required = set(model.model_json_schema()["required"])
        assert required <= shown, kind
        assert all(name in schema["description"] for name in required | {kind})
    assert params["properties"]["priority"]["enum"] == ["high", "medium", "low"]
    assert "anyOf" not in json.dumps(params) and "$ref" not in json.dumps(params)


def test_fields_the_schema_does_not_show_are_still_recorded(project: Path) -> None:
    engine = _engine(project)
    engine.handle_tool_call("baton_capture", {"kind": "objective", "objective": "ship the retry"})
    answer = json.loads(engine.handle_tool_call("baton_capture", {
        "kind": "open_item", "description": "wire the retry", "acceptance_check": "the test passes",
        "blocked_by": ["D-001"]}))
    assert answer["ok"] is True, answer
    shown = json.loads(baton_cli(project, "handoff", "show", answer["handoff"]["id"], "--json"))
    item = shown["content"]["open_items"][0]
    assert (item["acceptance_check"], item["blocked_by"]) == ("the test passes", ["D-001"])


def test_resume_inside_hermes_counts_with_the_engines_settings_and_counter(project: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`baton.tokenizer` from config.yaml (not BATON_*) reaches baton_resume, through the engine's ONE counter."""
    from batontest.assets import qwen3_dir

    from baton_engine.operations import context

    runtime = BatonRuntime(load_settings(env={}, hermes_block={"tokenizer": {"backend": "hf",
                                                                             "path": str(qwen3_dir())}}))
    set_runtime(runtime)
    engine = BatonContextEngine(project_dir=project)
    engine.on_session_start("tools-session")
    engine.compress([*MESSAGES, {"role": "assistant", "content": "Done with step one."},
                     {"role": "user", "content": "Next"}])
    built: list[Any] = []
    monkeypatch.setattr(context, "build_backend", lambda *args, **kwargs: built.append(args))
    first = json.loads(engine.handle_tool_call("baton_resume", {}))
    second = json.loads(engine.handle_tool_call("baton_resume", {}))
    assert first["ok"] and first == second
    assert first["brief"]["counter_source"] == runtime.main.source() and runtime.main.source().startswith("hf:")
    assert built == []
