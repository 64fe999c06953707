"""Many users on one gateway: a handoff belongs to its conversation (platform + gateway session key).

Two chats share one working directory, as a gateway runs, each an agent through a fake host. User 1 states a
private codename and compacts; user 2 then calls every Baton tool the way a model may (``baton_resume`` with no
arguments, as its schema allows; a guessed ref; ``baton_status``; ``baton_recall``) and compacts itself: nothing of
user 1's reaches it. User 1's own later session still resumes its handoff. The ``share_handoffs`` setting opens the
project to every conversation; the CLI keeps its project-wide resume. (How Hermes' gateway names an agent's project
is Hermes' own: ``tests/hermes/test_isolation.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.records import handoff_records
from batontest.schemas import assert_conforms
from batontest.started_agent import settings, started_agent

from baton_engine.agent.agent import Agent

CODENAME = "FALCON-7731"
USER_1 = "agent:main:telegram:dm:1001"
USER_2 = "agent:main:telegram:dm:2002"
USER_1_WORDS = [{"role": "user", "content": f"My private codename is {CODENAME}. Review the eight parser files."},
                {"role": "assistant", "content": f"Reviewed the parser files for {CODENAME}."},
                {"role": "user", "content": "continue"}]
USER_2_WORDS = [{"role": "user", "content": "Please resume my work."},
                {"role": "assistant", "content": "Looking for earlier work."},
                {"role": "user", "content": "go on"}]


def agent_in(project: Path, session_id: str, key: str | None, platform: str = "telegram", **block: Any) -> Agent:
    """The agent of conversation ``key`` on ``platform``, after its session started."""
    return started_agent(project, settings(**block), session_id=session_id, platform=platform, conversation_id=key)


def tool(agent: Agent, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = agent.tool_handler.handle(name, args, [])
    return json.loads(text), text


def compact(agent: Agent, messages: list[dict[str, Any]]) -> None:
    agent.compact(messages, None, None, False)


@pytest.fixture
def user_1_handoff(project: Path) -> dict[str, Any]:
    first = agent_in(project, "s-user1", USER_1)
    json.loads(first.tool_handler.handle("baton_capture", {"kind": "decision", "item": {
        "decision": f"Keep {CODENAME} out of the logs", "rationale": "the user asked"}}, USER_1_WORDS))
    compact(first, USER_1_WORDS)
    handoff = first.status()["latest_handoff"]
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
    second = agent_in(project, "s-user2", USER_2)
    assert second.status()["latest_handoff"] is None  # a new conversation starts clean
    answer, text = tool(second, "baton_resume", {})
    assert not answer["ok"] and answer["error"]["kind"] == "not_found"
    assert CODENAME not in text and user_1_handoff["short_id"] not in text


@pytest.mark.parametrize("form", ["id", "short_id", "prefix", "path"])
def test_baton_resume_of_another_conversations_ref_is_not_found(project: Path, user_1_handoff: dict[str, Any],
                                                                 form: str) -> None:
    record_path = next((project / ".baton" / "handoffs").glob(f"*--{user_1_handoff['short_id']}.json"))
    ref = {"id": user_1_handoff["id"], "short_id": user_1_handoff["short_id"], "prefix": user_1_handoff["id"][:6],
           "path": str(record_path)}[form]
    second = agent_in(project, "s-user2", USER_2)
    answer, text = tool(second, "baton_resume", {"ref": ref})
    assert not answer["ok"] and answer["error"]["kind"] == "not_found"
    assert CODENAME not in text


def test_baton_status_counts_only_the_own_conversation(project: Path, user_1_handoff: dict[str, Any]) -> None:
    second = agent_in(project, "s-user2", USER_2)
    answer, text = tool(second, "baton_status", {})
    assert answer["ok"] and answer["counts"] == {} and answer["latest_ready"] is None
    assert answer["scope"]["kind"] == "owner" and user_1_handoff["short_id"] not in text
    first_again = agent_in(project, "s-user1-b", USER_1)
    mine, _ = tool(first_again, "baton_status", {})
    assert mine["latest_ready"]["id"] == user_1_handoff["id"]


def test_baton_recall_searches_only_the_own_lineage(project: Path, user_1_handoff: dict[str, Any]) -> None:
    second = agent_in(project, "s-user2", USER_2)
    answer, text = tool(second, "baton_recall", {"mode": "search", "query": CODENAME})
    assert answer["ok"] and answer["hits"] == [] and CODENAME not in text.replace(answer["query"], "")


def test_the_other_conversations_handoff_continues_nothing_of_user_1(project: Path,
                                                                   user_1_handoff: dict[str, Any]) -> None:
    second = agent_in(project, "s-user2", USER_2)
    compact(second, USER_2_WORDS)
    handoff = second.status()["latest_handoff"]
    assert handoff["parents"] == []
    assert handoff["owner"]["conversation_id"] != user_1_handoff["owner"]["conversation_id"]
    record = next(r for r in handoff_records(project) if r["id"] == handoff["id"])
    assert CODENAME not in json.dumps(record) and record["decisions"] == []


def test_user_1_still_resumes_and_continues_its_own_handoff(project: Path, user_1_handoff: dict[str, Any]) -> None:
    compact(agent_in(project, "s-user2", USER_2), USER_2_WORDS)  # a later handoff by someone else
    first_again = agent_in(project, "s-user1-b", USER_1)  # a new agent (or /new) in user 1's chat
    assert first_again.status()["latest_handoff"]["id"] == user_1_handoff["id"]
    answer, text = tool(first_again, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"] and CODENAME in text
    compact(first_again, [*USER_1_WORDS, {"role": "user", "content": "next file"}])
    assert first_again.status()["latest_handoff"]["parents"] == [user_1_handoff["id"]]


def test_sharing_is_an_explicit_setting(project: Path, user_1_handoff: dict[str, Any]) -> None:
    shared = agent_in(project, "s-user2", USER_2, share_handoffs=True)
    assert shared.status()["latest_handoff"] is None  # sharing shows, it does not continue by itself
    answer, _ = tool(shared, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"]


def test_the_cli_keeps_the_project_wide_resume(project: Path, user_1_handoff: dict[str, Any]) -> None:
    local = agent_in(project, "s-cli", None, platform="cli")
    answer, _ = tool(local, "baton_resume", {})
    assert answer["ok"] and answer["handoff"]["id"] == user_1_handoff["id"]


def test_a_gateway_platform_without_a_conversation_id_is_scoped_by_its_session(project: Path) -> None:
    """A gateway that names no conversation (Hermes' API server without ``X-Hermes-Session-Key``): each
    session is its own owner."""
    first = agent_in(project, "api-conv-1", None, platform="api_server")
    compact(first, USER_1_WORDS)
    other = agent_in(project, "api-conv-2", None, platform="api_server")
    answer, _ = tool(other, "baton_resume", {})
    assert not answer["ok"] and other.status()["latest_handoff"] is None
