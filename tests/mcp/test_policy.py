"""baton-mcp guardrails over the real stdio transport: each refusal is a tool error (isError) with the Baton
error kind and a message saying what to do, and the project's `.baton/` tree is byte-identical afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import ClientSession

from batontest.secrets_corpus import SAMPLES_BY_NAME

SECRET_SAMPLES = ("openai_project", "github_classic_pat", "aws_secret_access_key", "pem_rsa_private_key",
                  "url_password", "bearer_header")
ALL_TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("baton_status", {}),
    ("handoff_capture", {"work": {"title": "t", "objective": "o"}, "summary": {"current_state": "s"}}),
    ("handoff_validate", {"ref": "0123abcd"}),
    ("handoff_ready", {"ref": "0123abcd"}),
    ("handoff_resume", {}),
    ("handoff_list", {}),
    ("handoff_fork", {"ref": "0123abcd", "label": "x"}),
    ("handoff_merge", {"refs": ["0123abcd", "4567abcd"], "resolution": "r"}),
    ("handoff_detect", {"event": {"explicit": True}}),
]


def calls(*requests: tuple[str, dict[str, Any]]):
    async def scenario(session: ClientSession) -> list[Any]:
        return [await session.call_tool(name, arguments) for name, arguments in requests]

    return scenario


def assert_refused(result: Any, kind: str, *phrases: str) -> str:
    assert result.is_error, result.content
    text = result.content[0].text
    assert result.structured_content["ok"] is False
    assert result.structured_content["error"]["kind"] == kind, text
    assert text == f"error ({kind}): {result.structured_content['error']['message']}"
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    return text


def ready_draft(mcp_session, project: Path, payload) -> str:
    async def scenario(session: ClientSession) -> str:
        created = await session.call_tool("handoff_capture", payload())
        short = created.structured_content["handoff"]["short_id"]
        assert not (await session.call_tool("handoff_ready", {"ref": short})).is_error
        return short

    return mcp_session(project, scenario)


def test_out_of_root_paths_are_refused_before_anything_is_written(
        project: Path, tmp_path: Path, mcp_session, payload, store_bytes) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not part of the project\n", encoding="utf-8")
    (project / "escape").symlink_to(tmp_path)
    before = store_bytes(project)
    results = mcp_session(project, calls(
        ("handoff_capture", payload(artifacts=[{"path": "../outside.txt"}])),
        ("handoff_capture", payload(artifacts=[{"path": str(outside)}])),
        ("handoff_capture", payload(artifacts=[{"path": "escape/outside.txt"}])),
        ("handoff_capture", payload(evidence=[{"type": "file", "claim": "seen", "ref": "src/../../outside.txt"}])),
        ("handoff_detect", {"event": {"explicit": True}, "capture": payload(artifacts=[{"path": "../outside.txt"}])}),
    ))
    assert_refused(results[0], "policy_blocked", "artifacts[0].path", "traversal", "nothing was written")
    assert_refused(results[1], "policy_blocked", "artifacts[0].path", "outside the project root")
    assert_refused(results[2], "policy_blocked", "artifacts[0].path", "symlink")
    assert_refused(results[3], "policy_blocked", "evidence[0].ref", "traversal")
    assert_refused(results[4], "policy_blocked", "detect capture refused", "artifacts[0].path")
    assert store_bytes(project) == before


def test_allowed_roots_from_the_project_config_are_honoured(
        project: Path, tmp_path: Path, mcp_session, payload) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "schema.sql").write_text("create table t (id int);\n", encoding="utf-8")
    config_path = project / ".baton" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.setdefault("policy", {})["allowed_roots"] = [str(shared)]
    config_path.write_text(json.dumps(config), encoding="utf-8")
    [result] = mcp_session(project, calls(
        ("handoff_capture", payload(artifacts=[{"path": str(shared / "schema.sql"), "role": "read"}]))))
    assert not result.is_error, result.content
    assert result.structured_content["handoff"]["status"] == "draft"


def test_uninitialised_project_every_tool_refuses_and_nothing_is_created(
        tmp_path: Path, mcp_session, store_bytes) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "notes.txt").write_text("hello\n", encoding="utf-8")
    results = mcp_session(bare, calls(*ALL_TOOL_CALLS))
    for (name, _arguments), result in zip(ALL_TOOL_CALLS, results, strict=True):
        assert_refused(result, "not_found", "no Baton project", "baton init")
        assert name
    assert sorted(path.name for path in bare.iterdir()) == ["notes.txt"]
    assert not (tmp_path / ".baton").exists()


def test_secret_under_an_unknown_capture_field_is_refused_and_never_echoed(
        project: Path, mcp_session, payload, store_bytes) -> None:
    sample = SAMPLES_BY_NAME["openai_project"]
    before = store_bytes(project)
    [result] = mcp_session(project, calls(
        ("handoff_capture", payload(api_key=sample.text, origin={"harness": "codex", "token": sample.text}))))
    text = assert_refused(result, "input_error", "api_key", "origin.token", "Extra inputs are not permitted")
    dumped = json.dumps(result.structured_content) + text
    assert all(secret not in dumped for secret in sample.secrets)
    assert store_bytes(project) == before


def leaky_payload(payload, samples) -> dict[str, Any]:
    return payload(evidence=[{"type": "command", "claim": f"deploy log {index}", "ref": "make deploy",
                              "output": sample.text} for index, sample in enumerate(samples)],
                   risks=[{"description": f"pasted by mistake: {sample.text}"} for sample in samples])


def test_secret_in_capture_text_is_refused_by_default_and_never_echoed(
        project: Path, mcp_session, payload, store_bytes) -> None:
    samples = [SAMPLES_BY_NAME[name] for name in SECRET_SAMPLES]
    before = store_bytes(project)
    [result] = mcp_session(project, calls(("handoff_capture", leaky_payload(payload, samples))))
    text = assert_refused(result, "policy_blocked", "risks[0].description", "accept_redactions=true")
    dumped = json.dumps(result.structured_content) + text
    for sample in samples:
        assert all(secret not in dumped for secret in sample.secrets), sample.name
    assert store_bytes(project) == before


def test_secret_in_capture_text_is_redacted_recorded_and_never_persisted_or_returned_when_accepted(
        project: Path, mcp_session, payload, store_bytes) -> None:
    samples = [SAMPLES_BY_NAME[name] for name in SECRET_SAMPLES]
    leaky = {**leaky_payload(payload, samples), "accept_redactions": True}
    [result] = mcp_session(project, calls(("handoff_capture", leaky)))
    assert not result.is_error, result.content
    redactions = result.structured_content["redactions"]
    assert {item["field"] for item in redactions} >= {f"risks[{i}].description" for i in range(len(samples))}
    assert all(set(item) == {"field", "reason", "replacement"} for item in redactions)
    stored = b"".join(blob for blob in store_bytes(project).values() if blob)
    returned = json.dumps(result.structured_content) + result.content[0].text
    for sample in samples:
        for secret in sample.secrets:
            assert secret.encode() not in stored, sample.name
            assert secret not in returned, sample.name


def test_merge_without_resolution_is_refused_and_writes_nothing(
        project: Path, mcp_session, payload, store_bytes) -> None:
    first = ready_draft(mcp_session, project, payload)
    second = ready_draft(mcp_session, project, lambda: payload(
        decisions=[{"decision": "tax rates live in code", "rationale": "simpler"}]))
    before = store_bytes(project)
    results = mcp_session(project, calls(("handoff_merge", {"refs": [first, second]}),
                                         ("handoff_merge", {"refs": [first]})))
    assert_refused(results[0], "conflict", "decisions conflict", "write a resolution decision")
    assert_refused(results[1], "input_error", "refs", "at least 2 items")
    assert store_bytes(project) == before


def test_recheck_of_a_command_not_on_the_allowlist_runs_nothing_and_writes_nothing(
        project: Path, mcp_session, payload, store_bytes) -> None:
    first = ready_draft(mcp_session, project, payload)
    before = store_bytes(project)
    [refused, mixed] = mcp_session(project, calls(
        ("handoff_validate", {"ref": first, "recheck": ["touch pwned"]}),
        ("handoff_validate", {"ref": first, "recheck": ["git status", "touch pwned"]})))
    for result in (refused, mixed):
        assert_refused(result, "policy_blocked", "'touch pwned'", "policy.recheck_allowlist", "nothing was run")
    assert not (project / "pwned").exists()
    assert store_bytes(project) == before


def test_ready_with_warnings_needs_an_acknowledgement(project: Path, mcp_session, payload) -> None:
    vague = payload(open_items=[{"description": "look at totals again"}])  # no action, no acceptance check

    async def scenario(session: ClientSession) -> list[Any]:
        short = (await session.call_tool("handoff_capture", vague)).structured_content["handoff"]["short_id"]
        return [await session.call_tool("handoff_ready", {"ref": short}),
                await session.call_tool("handoff_ready",
                                        {"ref": short, "accept_warnings": "spike, next owner decides"}),
                await session.call_tool("handoff_ready", {"ref": short, "accept_warnings": ""})]

    unacknowledged, acknowledged, empty = mcp_session(project, scenario)
    assert_refused(unacknowledged, "validation_failed", "warnings", "accept-warnings")
    assert unacknowledged.structured_content["handoff"]["status"] != "ready"
    assert not acknowledged.is_error, acknowledged.content
    assert acknowledged.structured_content["handoff"]["status"] == "ready"
    assert acknowledged.structured_content["accepted_warnings"]["reason"] == "spike, next owner decides"
    assert_refused(empty, "input_error", "accept_warnings")
