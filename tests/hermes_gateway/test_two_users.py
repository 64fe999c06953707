"""Two users on one REAL ``hermes gateway run`` (API server platform, one working directory): a handoff belongs
to its conversation.

User 1 (``X-Hermes-Session-Key`` ALICE) states a private codename and reviews eight parser files; Baton compacts
and stores handoffs, and its own ``baton_recall`` finds the codename. User 2 (BOB, another conversation) asks to
resume: the scripted model calls ``baton_resume`` with no arguments (as its schema allows), ``baton_recall`` for the
codename and ``baton_status``, then reads notes of its own until Baton compacts it. Then user 1 starts a new
transcript in its conversation and resumes, and a client that sends no session key tries the same tools, then works
until it compacts and continues its session (``X-Hermes-Session-Id``) to resume its own handoff. The model
stand-in sees every request: nothing of user 1's (codename, file names, objective, handoff ids) is in any request made
for user 2, nor in any tool's answer to it; user 1 gets its brief back. The gateway runs once for the module (40-50 s
on a busy 2-core machine); each test reads one tool's part of the run.

A request belongs to the conversation Hermes sent it for, not to the turn that was running when it arrived: the
gateway runs under ``batontest.conversation_tap``, which tags every request with Hermes' own conversation id (the
session's lineage root, which auxiliary calls such as 0.22's background session title carry too), and the run is
read only after the gateway has stopped, so a late background request is still given to its own conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from batontest.hermes_gateway import ChatReply, HermesGateway, gateway_config, require_gateway
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import MODEL, PROJECT_FILES, WINDOW
from batontest.model_server import ModelServer, RecordedRequest, Reply, ScriptedPolicy, ToolCall, filler_text
from batontest.records import handoff_records
from batontest.schemas import assert_conforms

from baton_engine.handoff.capture import hash_session_id

pytestmark = pytest.mark.hermes

CODENAME = "FALCON-7731"
ALICE, BOB = "agent:main:api_server:dm:alice", "agent:main:api_server:dm:bob"  # the clients' chat keys
USER_1_TASK = f"My private codename is {CODENAME}. Review the eight ledger parser files under src/."
USER_1_FILES = [f"src/ledger_parser_{n:02d}.py" for n in range(1, 9)]
USER_2_TASK = "Please resume my earlier work."
USER_2_FILES = [f"docs/garden_notes_{n:02d}.md" for n in range(1, 5)]
KEYLESS_FILES = [f"docs/tide_tables_{n:02d}.md" for n in range(1, 5)]
USER_1_AGAIN = "Resume where we left off."
KEYLESS_TASK = "Resume the work of this chat."  # a client that sends no X-Hermes-Session-Key
FILE_WORDS = 1_800  # ~3.6k Qwen3 tokens per read_file result
# Below the floor of this ~4k fixed part (system prompt + file and Baton tools), so Baton raises it to that floor
# (policy.trigger_floor, ~17k): a compaction every three or four files
TRIGGER = 9_000
TOOLSETS = ["file", "context_engine"]
# Words only user 1's conversation has (its handoff ids join them once the records exist).
USER_1_MARKS = (CODENAME, "ledger_parser", "ledger parser", "Review the eight")


def source_file(name: str) -> str:
    return f"# {name} BEGIN\n" + filler_text(Path(name).stem, FILE_WORDS) + f"\n# {name} END\n"


def read(project: Path, name: str) -> Reply:
    return Reply(content=f"Reading {name}.", tool_calls=(ToolCall("read_file", {"path": str(project / name)}),))


def call(name: str, **arguments: Any) -> Reply:
    return Reply(content=f"Calling {name}.", tool_calls=(ToolCall(name, arguments),))


ASKED = {"mode": "search", "query": "private codename"}  # what user 2 would ask: it does not know the codename
GUESSED = {"mode": "search", "query": CODENAME}  # the worst case: it does (its model typed it: not a leak)


@dataclass
class Phase:
    """One user's chat request through the gateway, and every request the model server received for its
    conversation (its Hermes session: a phase that continues a session shares that session's requests)."""

    reply: ChatReply
    requests: list[RecordedRequest] = field(default_factory=list)

    def tool_answers(self, name: str) -> list[tuple[dict[str, Any], str]]:
        """Each answer (parsed, raw) Hermes sent back for the model's ``name`` calls, from the request after it."""
        ids = [f"call_{r.index}_{i}" for r in self.requests if r.reply
               for i, c in enumerate(r.reply.tool_calls) if c.name == name]
        answers = {}
        for request in self.requests:
            for message in request.messages:
                if message.get("role") == "tool" and message.get("tool_call_id") in ids:
                    answers.setdefault(message["tool_call_id"], str(message["content"]))
        assert sorted(answers) == sorted(ids), f"missing {name} answers: {ids} vs {sorted(answers)}"
        return [(json.loads(answers[i]), answers[i]) for i in ids]

    def handoff_blocks(self) -> list[str]:
        return sorted({str(m["content"]) for r in self.requests for m in r.messages
                       if str(m.get("content", "")).startswith("[Baton handoff")})


@dataclass
class Run:
    user_1: Phase
    user_2: Phase
    user_1_again: Phase
    keyless: Phase
    keyless_work: Phase
    keyless_again: Phase
    records: list[dict[str, Any]]

    def owned_by(self, key: str) -> list[dict[str, Any]]:
        """The records of one conversation (its session key, or its session id without one), oldest first (ids are UUID v7: time-ordered)."""
        return sorted((r for r in self.records if (r["origin"].get("owner") or {}).get("conversation_id")
                       == hash_session_id(key)), key=lambda r: r["id"])


def _chat(gateway: HermesGateway, server: ModelServer, steps: list[Any], final: str, key: str | None,
          text: str, session_id: str | None = None) -> ChatReply:
    policy = server.policy = ScriptedPolicy(steps, final_answer=final)
    reply = gateway.chat(key, [{"role": "user", "content": text}], session_id=session_id)
    assert policy.position == len(steps), f"the model's script did not run to its end:\n{gateway.log_tail()}"
    return reply


def by_conversation(requests: list[RecordedRequest], replies: list[ChatReply]) -> list[Phase]:
    """Each reply's phase with the requests of its conversation, whenever they arrived; every request must name
    one of these conversations (an untagged or unknown one fails here rather than being given to anybody)."""
    sessions = {reply.session_id for reply in replies}
    strays = [(r.index, r.main, r.conversation) for r in requests if r.conversation not in sessions]
    assert not strays, f"requests of no known conversation (index, main, tag): {strays}; known: {sorted(sessions)}"
    return [Phase(reply, [r for r in requests if r.conversation == reply.session_id]) for reply in replies]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    require_gateway()
    work = tmp_path_factory.mktemp("gateway")
    files = {name: source_file(name) for name in USER_1_FILES + USER_2_FILES + KEYLESS_FILES}
    project = git_project(work / "project", {**PROJECT_FILES, **files})
    baton_init(project)
    with ModelServer(ScriptedPolicy([]), context_window=WINDOW) as server:
        config = hermes_config(base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=WINDOW,
                               baton={"fallback_token_threshold": TRIGGER, "auto_checkpoint_on_end": False})
        home = write_hermes_home(work / "hermes-home", gateway_config(config, project, TOOLSETS))
        with HermesGateway(home, project, hermes_env(home)) as gateway:
            reviews = [*(read(project, n) for n in USER_1_FILES), call("baton_recall", **ASKED)]
            user_1 = _chat(gateway, server, reviews, "Reviewed the parsers.", ALICE, USER_1_TASK)
            # the guessed codename last: no compaction of user 2 takes the model's own words into a brief
            user_2 = _chat(gateway, server, [call("baton_resume"), call("baton_recall", **ASKED),
                                             call("baton_status"), *(read(project, n) for n in USER_2_FILES),
                                             call("baton_recall", **GUESSED)], "Read the notes.", BOB, USER_2_TASK)
            user_1_again = _chat(gateway, server, [call("baton_resume"), call("baton_status")],
                                 "Resumed.", ALICE, USER_1_AGAIN)
            keyless = _chat(gateway, server, [call("baton_resume"), call("baton_recall", **ASKED),
                                              call("baton_status")], "Nothing to resume.", None, KEYLESS_TASK)
            keyless_work = _chat(gateway, server, [read(project, n) for n in KEYLESS_FILES], "Read the tides.",
                                 None, "Read the tide tables under docs/.")
            keyless_again = _chat(gateway, server, [call("baton_resume")], "Resumed.", None, "Where were we?",
                                  session_id=keyless_work.session_id)
        # the gateway has stopped: every request it sent, background ones included, is recorded
        assert not server.rejections, [(r.index, r.rejection) for r in server.rejections]
        phases = by_conversation(server.requests, [user_1, user_2, user_1_again, keyless, keyless_work, keyless_again])
    yield Run(*phases, handoff_records(project))


def user_1_marks(run: Run) -> list[str]:
    ids = [v for r in run.owned_by(ALICE) for v in (r["id"], r["id"][-8:])]
    return [*USER_1_MARKS, *ids]


def without_the_models_query(messages: list[dict[str, Any]]) -> str:
    """A request's messages as text, minus what user 2's model typed itself: its ``baton_recall`` query (in the
    call's arguments and echoed in the answer's ``query``)."""
    shown = []
    for message in messages:
        message = dict(message)
        calls = [c for c in message.pop("tool_calls", None) or []
                 if json.loads(c["function"]["arguments"]) != GUESSED]
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and content.startswith("{"):
            answer = json.loads(content)
            if isinstance(answer, dict) and answer.get("query") == CODENAME:
                message["content"] = json.dumps({k: v for k, v in answer.items() if k != "query"})
        shown.append({**message, "tool_calls": calls})
    return json.dumps(shown)


def assert_nothing_of_user_1(run: Run, text: str, where: str) -> None:
    lowered = text.lower()
    leaked = {mark: text[max(0, lowered.find(mark.lower()) - 300):lowered.find(mark.lower()) + 100]
              for mark in user_1_marks(run) if mark.lower() in lowered}
    assert not leaked, f"{where} carries user 1's {leaked}"


def test_the_gateway_keys_each_conversation_by_its_session_key(run: Run) -> None:
    """What the API server gives Baton: platform ``api_server`` and ``X-Hermes-Session-Key`` as the conversation
    (stored hashed); both users compacted, into their own records."""
    assert run.user_1.reply.session_key == ALICE and run.user_2.reply.session_key == BOB
    assert run.user_1.reply.session_id != run.user_2.reply.session_id
    assert len(run.owned_by(ALICE)) >= 2 and len(run.owned_by(BOB)) >= 1
    keyless = run.keyless_work.reply.session_id  # no session key: the session id is the conversation
    conversations = {hash_session_id(key) for key in (ALICE, BOB, keyless)}
    assert {r["origin"]["owner"]["conversation_id"] for r in run.records} == conversations
    for record in run.records:
        assert_conforms(record)
        assert record["origin"]["owner"]["platform"] == "api_server"
        assert ALICE not in json.dumps(record) and BOB not in json.dumps(record)


def test_no_request_for_user_2_carries_anything_of_user_1(run: Run) -> None:
    assert len(run.user_2.requests) >= len(USER_2_FILES) + 4
    for request in run.user_2.requests:
        assert_nothing_of_user_1(run, without_the_models_query(request.messages), f"request {request.index}")
    assert_nothing_of_user_1(run, run.user_2.reply.content, "the gateway's answer to user 2")


def test_baton_resume_without_arguments_finds_only_the_own_conversation(run: Run) -> None:
    ((answer, text),) = run.user_2.tool_answers("baton_resume")
    assert not answer["ok"] and answer["error"]["kind"] == "not_found", answer
    assert_nothing_of_user_1(run, text, "user 2's baton_resume answer")
    ((mine, my_text),) = run.user_1_again.tool_answers("baton_resume")  # a new transcript in user 1's conversation
    assert run.user_1_again.reply.session_id != run.user_1.reply.session_id  # another Hermes session
    assert mine["ok"] and mine["handoff"]["id"] == run.owned_by(ALICE)[-1]["id"], mine
    assert CODENAME in my_text and "ledger_parser" in my_text


def test_baton_recall_searches_only_the_own_conversation(run: Run) -> None:
    (asked, asked_text), (guessed, guessed_text) = run.user_2.tool_answers("baton_recall")
    assert asked["ok"] and asked["hits"] == [], asked
    assert_nothing_of_user_1(run, asked_text, "user 2's baton_recall answer")
    assert guessed["ok"] and guessed["hits"] == [], guessed
    assert_nothing_of_user_1(run, guessed_text.replace(json.dumps(CODENAME), ""), "user 2's guessed baton_recall")
    ((mine, _),) = run.user_1.tool_answers("baton_recall")  # the same question in user 1's conversation
    assert mine["ok"] and any(CODENAME in hit["snippet"] for hit in mine["hits"]), mine


def test_baton_status_counts_only_the_own_conversation(run: Run) -> None:
    ((answer, text),) = run.user_2.tool_answers("baton_status")
    assert answer["ok"] and answer["counts"] == {} and answer["latest_ready"] is None, answer
    assert answer["scope"] == {"kind": "owner", "platform": "api_server", "conversation_id": hash_session_id(BOB)}
    assert_nothing_of_user_1(run, text, "user 2's baton_status answer")
    ((mine, _),) = run.user_1_again.tool_answers("baton_status")
    assert mine["latest_ready"]["id"] == run.owned_by(ALICE)[-1]["id"], mine


def test_the_brief_at_user_2s_compaction_continues_nothing_of_user_1(run: Run) -> None:
    blocks = run.user_2.handoff_blocks()
    assert blocks, "user 2 never compacted"
    for block in blocks:
        assert_nothing_of_user_1(run, block, "user 2's handoff block")
    first = run.owned_by(BOB)[0]
    assert first["lineage"]["parents"] == [] and first["work"]["objective"] == USER_2_TASK
    for record in run.owned_by(BOB):
        assert_nothing_of_user_1(run, json.dumps(record), f"user 2's record {record['id']}")
    assert any("ledger_parser" in block for block in run.user_1.handoff_blocks())  # user 1's own brief has them


def test_a_client_without_a_session_key_is_scoped_by_its_session(run: Run) -> None:
    """Without ``X-Hermes-Session-Key`` Hermes passes no conversation_id; Baton then keys the conversation by
    the session id the API server derived (Hermes' own fallback), and sees nothing of anyone else's."""
    ((resumed, resumed_text),) = run.keyless.tool_answers("baton_resume")
    ((recalled, recalled_text),) = run.keyless.tool_answers("baton_recall")
    ((status, status_text),) = run.keyless.tool_answers("baton_status")
    assert run.keyless.reply.session_key is None and run.keyless.reply.session_id.startswith("api-")
    assert status["scope"] == {"kind": "owner", "platform": "api_server",
                               "conversation_id": hash_session_id(run.keyless.reply.session_id)}
    assert not resumed["ok"] and recalled["hits"] == [] and status["counts"] == {}
    for text in (resumed_text, recalled_text, status_text,
                 *(without_the_models_query(r.messages) for r in run.keyless.requests)):
        assert_nothing_of_user_1(run, text, "the keyless client's request")
        assert "garden_notes" not in text  # nor of user 2's


def test_a_keyless_client_continuing_its_session_resumes_its_own_handoff(run: Run) -> None:
    """The keyless client's own work survives: after a compaction it continues its Hermes session
    (``X-Hermes-Session-Id``, the id the gateway answered with) and ``baton_resume`` finds its handoff."""
    own = run.owned_by(run.keyless_work.reply.session_id)
    ((answer, text),) = run.keyless_again.tool_answers("baton_resume")
    assert own and answer["ok"] and answer["handoff"]["id"] == own[-1]["id"], answer
    assert any(Path(name).stem in text for name in KEYLESS_FILES), text  # its own files
    assert_nothing_of_user_1(run, text, "the keyless client's own resume")
