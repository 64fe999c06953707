"""One brief budget: ``brief.max_tokens`` in .baton/config.json is the ``brief_max_tokens`` setting, and
`baton resume`, MCP ``handoff_resume`` and `baton doctor` all read it from ``settings.load_settings``."""

from __future__ import annotations

import json
from pathlib import Path

from mcp import ClientSession

BUDGET = 200


def _ready_handoff(project: Path, baton, json_file, payload) -> str:
    created = baton("checkpoint", "create", "--json", "--input", json_file(payload()), cwd=project)
    assert created.code == 0, created.stderr
    short = created.data["handoff"]["short_id"]
    assert baton("handoff", "ready", short, "--json", cwd=project).code == 0
    return short


def test_the_project_brief_budget_is_the_setting_every_surface_reads(project: Path, baton, json_file, payload,
                                                                     mcp_session) -> None:
    short = _ready_handoff(project, baton, json_file, payload)
    unbounded = baton("resume", "--json", cwd=project).data["brief"]
    assert unbounded["tokens"] > BUDGET and not unbounded["truncated"]  # the budget below really bites
    config = project / ".baton" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "brief": {"max_tokens": BUDGET}}))

    cli = baton("resume", short, "--json", cwd=project).data
    assert cli["brief"]["tokens"] <= BUDGET and cli["brief"]["truncated"]

    async def resume(session: ClientSession) -> dict:
        return (await session.call_tool("handoff_resume", {"ref": short})).structured_content

    assert mcp_session(project, resume) == cli
    doctor = baton("doctor", "--json", cwd=project).data
    settings = next(check for check in doctor["checks"] if check["name"] == "settings")
    assert f"brief_max_tokens={BUDGET} (brief.max_tokens in .baton/config.json)" in settings["detail"]
    explicit = baton("resume", short, "--max-tokens", "600", "--json", cwd=project).data["brief"]
    assert explicit["tokens"] > BUDGET  # an explicit --max-tokens is the caller's, above every setting


def test_a_project_brief_budget_no_brief_fits_in_is_an_error_naming_the_key(project: Path, baton, json_file,
                                                                            payload) -> None:
    short = _ready_handoff(project, baton, json_file, payload)
    config = project / ".baton" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "brief": {"max_tokens": 50}}))
    answer = baton("resume", short, "--json", cwd=project)
    assert answer.code == 2
    assert "brief.max_tokens in .baton/config.json must be an integer >= 128" in answer.data["error"]["message"]
