"""Tool parity through one agent (``Agent.tool_handler``) on a fake host: each tool answers with the JSON the
equivalent `baton ... --json` command prints; capture's input, errors and schema.

Why here: the tools and their answers are the core's; a host only passes a call through (Hermes:
``handle_tool_call``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from batontest.baton_cli import clean_env
from batontest.started_agent import new_agent, qwen3_tokenizer, settings

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, set_runtime

MESSAGES = [{"role": "user", "content": "Speed up the importer"},
            {"role": "assistant", "content": "Profiling shows the parser dominates."},
            {"role": "user", "content": "Go ahead"}]


def baton_cli(project: Path, *args: str) -> str:
    """`baton ARGS` of this checkout, run in ``project`` without BATON_* settings."""
    done = subprocess.run([sys.executable, "-c", "from baton_engine.cli import main; main()", *args],
                          cwd=project, capture_output=True, text=True, timeout=120, env=clean_env())
    assert done.stdout.strip(), done.stderr
    return done.stdout.strip()


def agent_in(project: Path) -> Agent:
    """An agent for ``project`` after its session started, on a runtime with the default settings."""
    set_runtime(BatonRuntime(settings()))
    agent = new_agent(project)
    agent.session_started("tools-session", model=None, rotated=False, platform=None, conversation_id=None)
    return agent


def call(agent: Agent, name: str, args: Any, messages: list[dict[str, Any]] | None = None) -> str:
    return agent.tool_handler.handle(name, args, messages)


def compact(agent: Agent, messages: list[dict[str, Any]]) -> None:
    agent.compact(messages, None, None, False)


def without(data: dict[str, Any], *volatile: str) -> dict[str, Any]:
    return {k: (without(v, *volatile) if isinstance(v, dict) else v) for k, v in data.items() if k not in volatile}


def test_status_parity(project: Path) -> None:
    """The store's part is `baton status --json`; `engine` is what only the running agent knows."""
    agent = agent_in(project)
    answer = json.loads(call(agent, "baton_status", {}))
    engine_part = answer.pop("engine")
    assert answer == json.loads(baton_cli(project, "status", "--json"))
    assert set(engine_part) == {"route", "window", "counting", "trigger", "tools", "notices", "settings_ignored"}


def test_status_answers_route_window_counting_and_trigger(project: Path) -> None:
    agent = agent_in(project)
    agent.requests.move_route(agent.route.moved(model="qwen3-test", base_url="http://127.0.0.1:9/v1", why="test"))
    agent.requests.set_context_length(32768)
    part = json.loads(call(agent, "baton_status", {}))["engine"]
    full = agent.status()
    assert part["route"]["model"] == "qwen3-test" and part["route"]["base_url"] == "http://127.0.0.1:9/v1"
    assert part["window"] == {"tokens": 32768, "source": "fake window", "mismatch": None}
    assert part["counting"]["source"] == full["tokenizer"]["source"] == "rough" and part["counting"]["error"] is None
    assert part["trigger"]["threshold"] == agent.threshold_tokens and not part["trigger"]["stuck"]
    assert part["trigger"]["tokens"] == full["trigger"]["tokens"] > 0


def test_resume_parity_and_error_parity(project: Path) -> None:
    agent = agent_in(project)
    missing_tool = json.loads(call(agent, "baton_resume", {}))
    assert missing_tool == json.loads(baton_cli(project, "resume", "--json"))
    assert missing_tool["ok"] is False and missing_tool["error"]["kind"] == "not_found"
    compact(agent, [*MESSAGES, {"role": "assistant", "content": "Done with step one."},
                    {"role": "user", "content": "Next"}])
    assert agent.status()["latest_handoff"]["status"] == "ready"
    tool = call(agent, "baton_resume", {})
    assert tool == baton_cli(project, "resume", "--json")
    assert json.loads(tool)["brief"]["text"].startswith("# Resume brief")
    short = agent.status()["latest_handoff"]["short_id"]
    assert call(agent, "baton_resume", {"ref": short, "max_tokens": 300}) == \
        baton_cli(project, "resume", short, "--max-tokens", "300", "--json")
    unknown = baton_cli(project, "resume", "nosuch", "--json")
    assert call(agent, "baton_resume", {"ref": "nosuch"}) == unknown


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
    agent = agent_in(project)
    tool = json.loads(call(agent, "baton_capture", {"kind": kind, "item": item}, MESSAGES))
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
    assert without(tool["item"], *volatile) == without(cli["item"], *volatile)
    assert tool["redactions"] == cli["redactions"] == []


def test_capture_input_errors_name_the_problem(project: Path) -> None:
    agent = agent_in(project)
    bad = json.loads(call(agent, "baton_capture", {"kind": "decision", "item": {"rationale": "no text"}}, MESSAGES))
    assert bad["ok"] is False and "decision" in bad["error"]["message"]
    assert json.loads(call(agent, "baton_capture", {"kind": "gossip"}))["ok"] is False
    fresh = agent_in(project)
    no_objective = json.loads(call(fresh, "baton_capture", {"kind": "decision", "item": {"decision": "x"}}))
    assert no_objective["ok"] is False and "objective" in no_objective["error"]["message"]


def test_capture_without_a_project_advises_init(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    answer = json.loads(call(agent, "baton_capture", {"kind": "decision", "item": {"decision": "x"}}, MESSAGES))
    assert answer["ok"] is False and "baton init" in answer["error"]["message"]


ITEMS = {
    "decision": {"decision": "stream the file", "rationale": "memory", "alternatives_considered": ["mmap"]},
    "evidence": {"type": "test", "claim": "parser is 3x faster", "ref": "pytest -k parser", "result": "5 passed"},
    "failed_attempt": {"attempt": "regex parser", "outcome": "too slow"},
    "open_item": {"description": "wire the CLI", "priority": "high", "suggested_action": "add flag"},
}


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_capture_accepts_nested_and_top_level_fields_alike(project: Path, kind: str) -> None:
    agent = agent_in(project)
    nested = json.loads(call(agent, "baton_capture", {"kind": kind, "item": ITEMS[kind]}, MESSAGES))
    flat = json.loads(call(agent, "baton_capture", {"kind": kind, **ITEMS[kind]}, MESSAGES))
    assert nested["ok"] and flat["ok"], (nested, flat)
    volatile = ("id", "made_at", "recorded_at", "captured_at")
    assert without(nested["item"], *volatile) == without(flat["item"], *volatile)
    assert flat["handoff"]["id"] == nested["handoff"]["id"]


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_capture_error_shows_the_expected_shape(project: Path, kind: str) -> None:
    from baton_engine.handoff import capture

    agent = agent_in(project)
    bad = json.loads(call(agent, "baton_capture", {"kind": kind, "colour": "blue"}, MESSAGES))
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
    agent = agent_in(project)
    call(agent, "baton_capture", {"kind": "objective", "objective": "ship the retry"})
    answer = json.loads(call(agent, "baton_capture", {
        "kind": "open_item", "description": "wire the retry", "acceptance_check": "the test passes",
        "blocked_by": ["D-001"]}))
    assert answer["ok"] is True, answer
    shown = json.loads(baton_cli(project, "handoff", "show", answer["handoff"]["id"], "--json"))
    item = shown["content"]["open_items"][0]
    assert (item["acceptance_check"], item["blocked_by"]) == ("the test passes", ["D-001"])


def test_resume_counts_with_the_runtimes_settings_and_counter(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``tokenizer`` the settings name (a ``baton:`` block, not BATON_*) reaches baton_resume, through the
    runtime's ONE counter."""
    from baton_engine.operations import context

    runtime = BatonRuntime(settings(tokenizer=qwen3_tokenizer()))
    set_runtime(runtime)
    agent = new_agent(project)
    agent.session_started("tools-session", model=None, rotated=False, platform=None, conversation_id=None)
    compact(agent, [*MESSAGES, {"role": "assistant", "content": "Done with step one."},
                    {"role": "user", "content": "Next"}])
    built: list[Any] = []
    monkeypatch.setattr(context, "build_backend", lambda *args, **kwargs: built.append(args))
    first = json.loads(call(agent, "baton_resume", {}))
    second = json.loads(call(agent, "baton_resume", {}))
    assert first["ok"] and first == second
    assert first["brief"]["counter_source"] == runtime.main.source() and runtime.main.source().startswith("hf:")
    assert built == []
