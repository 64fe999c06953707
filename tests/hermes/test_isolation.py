"""Many users on one gateway: a handoff belongs to its conversation (platform + gateway session key).

Two Telegram chats share one working directory, as a gateway runs. User 1 states a private codename and
compacts; user 2 then calls every Baton tool the way a model may (``baton_resume`` with no arguments, as
its schema allows; a guessed ref; ``baton_status``; ``baton_recall``) and compacts itself: nothing of user
1's reaches it. User 1's own later session still resumes its handoff. The ``share_handoffs`` setting
opens the project to every conversation; the CLI keeps its project-wide resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.hermes_home import initialised_project
from batontest.records import handoff_records
from batontest.schemas import assert_conforms

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.host import host_runtime
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
CODENAME = "FALCON-7731"
USER_1 = "agent:main:telegram:dm:1001"
USER_2 = "agent:main:telegram:dm:2002"
USER_1_WORDS = [{"role": "user", "content": f"My private codename is {CODENAME}. Review the eight parser files."},
                {"role": "assistant", "content": f"Reviewed the parser files for {CODENAME}."},
                {"role": "user", "content": "continue"}]
USER_2_WORDS = [{"role": "user", "content": "Please resume my work."},
                {"role": "assistant", "content": "Looking for earlier work."},
                {"role": "user", "content": "go on"}]


def _engine(project: Path, session_id: str, key: str | None, platform: str = "telegram",
            **block: Any) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings(hermes_block=block or None)))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", 65536)
    engine.on_session_start(session_id, platform=platform, conversation_id=key)
    return engine


def _tool(engine: BatonContextEngine, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = engine.handle_tool_call(name, args, messages=[])
    return json.loads(text), text


@pytest.fixture
def user_1_handoff(project: Path) -> dict[str, Any]:
    first = _engine(project, "s-user1", USER_1)
    json.loads(first.handle_tool_call("baton_capture", {"kind": "decision", "item": {
        "decision": f"Keep {CODENAME} out of the logs", "rationale": "the user asked"}}, messages=USER_1_WORDS))
    first.compress(USER_1_WORDS)
    handoff = first.get_status()["latest_handoff"]
    assert handoff is not None and handoff["status"] == "ready"
    return handoff


def test_records_carry_their_owner_hashed_and_conform(project: Path, user_1_handoff: dict[str, Any]) -> None:
    record = next(r for r in handoff_records(project) if r["id"] == user_1_handoff["id"])
    owner = record["origin"]["owner"]
    assert owner["platform"] == "telegram" and owner["conversation_id"].startswith("sha256:")
    assert USER_1 not in json.dumps(record) and "1001" not in owner["conversation_id"]
    assert user_1_handoff["owner"] == owner
    for stored in handoff_records(project):
        assert_conforms(stored)


def test_baton_resume_without_arguments_finds_nothing_of_another_conversation(
        project: Path, user_1_handoff: dict[str, Any]) -> None:
    second = _engine(project, "s-user2", USER_2)
    assert second.get_status()["latest_handoff"] is None  # a new conversation starts clean
    answer, text = _tool(second, "baton_resume", {})
    assert not answer["ok"] and answer["error"]["kind"] == "not_found"
    assert CODENAME not in text and user_1_handoff["short_id"] not in text


@pytest.mark.parametrize("form", ["id", "short_id", "prefix", "path"])
def test_baton_resume_of_another_conversations_ref_is_not_found(project: Path, user_1_handoff: dict[str, Any],
                                                                 form: str) -> None:
    record_path = next((project / ".baton" / "handoffs").glob(f"*--{user_1_handoff['short_id']}.json"))
    ref = {"id": user_1_handoff["id"], "short_id": user_1_handoff["short_id"], "prefix": user_1_handoff["id"][:6],
           "path": str(record_path)}[form]
    second = _engine(project, "s-user2", USER_2)
    answer, text = _tool(second, "baton_resume", {"ref": ref})
    assert not answer["ok"] and answer["error"]["kind"] == "not_found"
    assert CODENAME not in text


def test_baton_status_counts_only_the_own_conversation(project: Path, user_1_handoff: dict[str, Any]) -> None:
    second = _engine(project, "s-user2", USER_2)
    answer, text = _tool(second, "baton_status", {})
    assert answer["ok"] and answer["counts"] == {} and answer["latest_ready"] is None
    assert answer["scope"]["kind"] == "owner" and user_1_handoff["short_id"] not in text
    first_again = _engine(project, "s-user1-b", USER_1)
    mine, _ = _tool(first_again, "baton_status", {})
    assert mine["latest_ready"]["id"] == user_1_handoff["id"]


def test_baton_recall_searches_only_the_own_lineage(project: Path, user_1_handoff: dict[str, Any]) -> None:
    second = _engine(project, "s-user2", USER_2)
    answer, text = _tool(second, "baton_recall", {"mode": "search", "query": CODENAME})
    assert answer["ok"] and answer["hits"] == [] and CODENAME not in text.replace(answer["query"], "")


def test_the_other_conversations_handoff_continues_nothing_of_user_1(project: Path,
                                                                   user_1_handoff: dict[str, Any]) -> None:
    second = _engine(project, "s-user2", USER_2)
    second.compress(USER_2_WORDS)
    handoff = second.get_status()["latest_handoff"]
    assert handoff["parents"] == [] and handoff["owner"]["conversation_id"] != user_1_handoff["owner"]["conversation_id"]
    record = next(r for r in handoff_records(project) if r["id"] == handoff["id"])
    assert CODENAME not in json.dumps(record) and record["decisions"] == []


def test_user_1_still_resumes_and_continues_its_own_handoff(project: Path, user_1_handoff: dict[str, Any]) -> None:
    _engine(project, "s-user2", USER_2).compress(USER_2_WORDS)  # a later handoff by someone else
    first_again = _engine(project, "s-user1-b", USER_1)  # a new agent (or /new) in user 1's chat
    assert first_again.get_status()["latest_handoff"]["id"] == user_1_handoff["id"]
    answer, text = _tool(first_again, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"] and CODENAME in text
    first_again.compress([*USER_1_WORDS, {"role": "user", "content": "next file"}])
    assert first_again.get_status()["latest_handoff"]["parents"] == [user_1_handoff["id"]]


def test_sharing_is_an_explicit_setting(project: Path, user_1_handoff: dict[str, Any]) -> None:
    shared = _engine(project, "s-user2", USER_2, share_handoffs=True)
    assert shared.get_status()["latest_handoff"] is None  # sharing shows, it does not continue by itself
    answer, _ = _tool(shared, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"]


def test_the_cli_keeps_the_project_wide_resume(project: Path, user_1_handoff: dict[str, Any]) -> None:
    local = _engine(project, "s-cli", None, platform="cli")
    answer, _ = _tool(local, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"]


def test_a_gateway_platform_without_a_conversation_id_is_scoped_by_its_session(project: Path) -> None:
    """The API server without ``X-Hermes-Session-Key``: Hermes' own fallback, the session id."""
    first = _engine(project, "api-conv-1", None, platform="api_server")
    first.compress(USER_1_WORDS)
    other = _engine(project, "api-conv-2", None, platform="api_server")
    answer, _ = _tool(other, "baton_resume", {})
    assert not answer["ok"] and other.get_status()["latest_handoff"] is None


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
