"""Cross-harness round trip: a handoff the Baton engine wrote during a REAL Hermes run (hermes-agent 0.19.0,
scripted model on a loopback server, the hermes-e2e harness's driver and helpers) is resumed by an MCP client
session through `baton-mcp` and by a person through `baton resume --format prompt`: both see the same brief
and the same freshness verdict, and after a commit that changes a recorded artifact both report STALE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from batontest.assets import qwen3_dir
from batontest.baton_cli import run_baton
from batontest.gitrepo import git
from batontest.hermes_run import WINDOW, require_hermes, run_scenario
from batontest.model_server import ModelServer, Reply, ScriptedPolicy, ToolCall, todo_round
from batontest.records import handoff_records

pytestmark = pytest.mark.hermes

ARTIFACT = "src/parser.py"  # one of hermes_run.PROJECT_FILES
STALE_HEADING = "## STALE:"


def script(rounds: int = 10) -> ScriptedPolicy:
    """Bulky todo rounds (they force compactions) with a real `read_file` of the artifact every other round."""
    steps: list[Reply] = []
    for n in range(1, rounds + 1):
        if n % 2 == 1:
            steps.append(Reply(content=f"Reading the parser before round {n}.",
                               tool_calls=(ToolCall("read_file", {"path": ARTIFACT}),)))
        steps.append(todo_round(n))
    return ScriptedPolicy(steps, final_answer="Done: the parser findings are recorded.")


def run_hermes(tmp_path: Path) -> Path:
    """One real Hermes session with Baton as its context engine; returns the project it worked in."""
    with ModelServer(script(), context_window=WINDOW) as server:
        baton = {"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}, "fallback_token_threshold": 12_000,
                 "auto_checkpoint_on_end": False}
        run = run_scenario(tmp_path, server, baton=baton, max_tokens=4096, timeout=400,
                           toolsets=["todo", "context_engine", "file"],
                           turns=["Analyse the parser findings round by round and keep the task list current."])
    assert run.result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine"
    assert run.result["compression_count"] >= 1, run.result["status"]
    return run.project


def engine_handoff_with_artifact(project: Path) -> dict[str, Any]:
    """The newest ready record the engine wrote at a compaction that lists the artifact Hermes read."""
    records = handoff_records(project)
    candidates = [r for r in records if r["automation"]["trigger"] == "pre_compaction" and r["status"] == "ready"
                  and ARTIFACT in {a["path"] for a in r["artifacts"]}]
    assert candidates, [(r["status"], r["automation"]["trigger"], [a["path"] for a in r["artifacts"]]) for r in records]
    return candidates[-1]


def resume_both_ways(project: Path, ref: str, mcp_session) -> tuple[dict[str, Any], list[str], str]:
    async def scenario(session: ClientSession) -> tuple[dict[str, Any], list[str]]:
        result = await session.call_tool("handoff_resume", {"ref": ref})
        assert not result.is_error, result.content
        return result.structured_content, [block.text for block in result.content]

    structured, texts = mcp_session(project, scenario)
    cli = run_baton("resume", ref, "--format", "prompt", cwd=project)
    assert cli.code == 0, cli.stderr
    return structured, texts, cli.stdout


def test_hermes_handoff_resumes_the_same_through_mcp_and_the_cli_prompt(tmp_path: Path, mcp_session) -> None:
    require_hermes()
    project = run_hermes(tmp_path)
    record = engine_handoff_with_artifact(project)

    structured, texts, prompt = resume_both_ways(project, record["id"], mcp_session)
    assert structured["handoff"]["id"] == record["id"] and structured["handoff"]["status"] == "ready"
    assert structured["brief"]["text"].rstrip("\n") == prompt.rstrip("\n") == texts[1].rstrip("\n")
    assert record["work"]["objective"].splitlines()[0] in prompt
    assert structured["freshness"]["stale"] is False and STALE_HEADING not in prompt
    assert "fresh" in texts[0]

    (project / ARTIFACT).write_text("def parse(line):\n    return line.strip().split()\n", encoding="utf-8")
    git(project, "commit", "-qam", "parser strips")

    stale, stale_texts, stale_prompt = resume_both_ways(project, record["id"], mcp_session)
    assert stale["freshness"]["stale"] is True and "STALE" in stale_texts[0]
    assert ARTIFACT in json.dumps(stale["freshness"]["drifted_artifacts"])
    assert stale["freshness"]["git_head_now"] != stale["freshness"]["git_head_at_capture"]
    assert stale["brief"]["text"].rstrip("\n") == stale_prompt.rstrip("\n")
    assert STALE_HEADING in stale_prompt and ARTIFACT in stale_prompt
    if "## First next action" in stale_prompt:  # the warning comes before anything to act on
        assert stale_prompt.index(STALE_HEADING) < stale_prompt.index("## First next action")
