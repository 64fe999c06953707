"""The record model: round trips, schema conformance, the generated schema, status transitions."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from baton_engine.errors import ConflictError
from baton_engine.handoff import ids
from baton_engine.handoff.model import (
    IMMUTABLE_STATUSES,
    LEGACY_SCHEMA_ID,
    SCHEMA_ID,
    STATUS_TRANSITIONS,
    HandoffRecord,
    content_view,
    transition,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "generate_schema.py"

text = st.text(min_size=1, max_size=40)
maybe_text = st.none() | st.text(max_size=40)
stamp = st.datetimes(timezones=st.just(ids.UTC)).map(ids.format_timestamp)
structured = st.builds(lambda p, n: f"{p}-{n:03d}", st.sampled_from("DEOF"), st.integers(0, 999))
extra_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
extras = st.dictionaries(st.from_regex(r"x_[a-z]{1,6}", fullmatch=True), extra_value, max_size=2)


def with_extras(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda b, e: {**e, **b}, base, extras)


records = st.fixed_dictionaries(
    {
        "id": st.builds(ids.new_record_id),
        "status": st.sampled_from(sorted(STATUS_TRANSITIONS)),
        "flags": st.lists(st.sampled_from(["invalid", "conflicted"]), max_size=2),
        "created_at": stamp,
        "updated_at": stamp,
        "project": with_extras(
            st.fixed_dictionaries(
                {
                    "id": st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True),
                    "root_hint": st.text(max_size=20),
                    "repository": st.none()
                    | st.fixed_dictionaries(
                        {"vcs": st.just("git"), "remote_hint": maybe_text, "head": maybe_text,
                         "dirty": st.none() | st.booleans()}
                    ),
                }
            )
        ),
        "origin": st.fixed_dictionaries(
            {
                "harness": st.sampled_from(["codex", "claude-code", "cursor", "gemini-cli", "generic"]),
                "session_id": maybe_text,
                "actor": st.none() | st.fixed_dictionaries(
                    {"type": st.sampled_from(["agent", "human", "mixed"]), "name": maybe_text}
                ),
            }
        ),
        "work": with_extras(
            st.fixed_dictionaries({"title": text, "objective": text, "scope": st.lists(text, max_size=3)})
        ),
        "summary": st.fixed_dictionaries({"current_state": text, "completed": st.lists(text, max_size=3)}),
        "decisions": st.lists(
            with_extras(st.fixed_dictionaries(
                {"id": structured, "decision": text, "made_at": stamp, "evidence_ids": st.lists(structured, max_size=2)}
            )),
            max_size=3,
        ),
        "artifacts": st.lists(
            st.fixed_dictionaries(
                {"path": text, "role": st.sampled_from(["modified", "created", "read", "generated"]),
                 "sensitive": st.booleans()}
            ),
            max_size=3,
        ),
        "evidence": st.lists(
            st.fixed_dictionaries(
                {"id": structured, "type": st.sampled_from(["command", "test", "file", "commit", "url", "human"]),
                 "claim": text, "captured_at": stamp, "result": maybe_text}
            ),
            max_size=3,
        ),
        "open_items": st.lists(
            st.fixed_dictionaries(
                {"id": structured, "priority": st.sampled_from(["high", "medium", "low"]), "description": text,
                 "suggested_action": maybe_text, "blocked_by": st.lists(structured, max_size=2)}
            ),
            max_size=3,
        ),
        "risks": st.lists(st.fixed_dictionaries({"description": text}), max_size=2),
        "validation": st.fixed_dictionaries(
            {"status": st.sampled_from(["pass", "warn", "fail", "not_run"]),
             "checks": st.lists(st.fixed_dictionaries(
                 {"name": text, "status": st.sampled_from(["pass", "warn", "fail", "skipped"]),
                  "detail": st.text(max_size=20)}
             ), max_size=3)}
        ),
        "lineage": st.fixed_dictionaries(
            {"parents": st.lists(st.builds(ids.new_record_id), max_size=2),
             "relation": st.sampled_from(["root", "continue", "fork", "merge", "amend"]),
             "branch_label": maybe_text}
        ),
        "automation": st.fixed_dictionaries(
            {"trigger": st.sampled_from(["manual", "threshold", "hook", "timeout", "pre_compaction"]),
             "score": st.none() | st.floats(0, 1), "reasons": st.lists(text, max_size=2)}
        ),
        "redactions": st.lists(st.fixed_dictionaries({"field": text, "reason": text}), max_size=2),
        "failed_attempts": st.lists(
            st.fixed_dictionaries({"id": structured.map(lambda s: "F" + s[1:]), "attempt": text, "recorded_at": stamp}),
            max_size=2,
        ),
    }
).flatmap(lambda base: extras.map(lambda e: {**e, **base}))


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate_schema", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=records)
def test_random_records_round_trip_byte_identical_and_conform(data: dict[str, Any], assert_conforms) -> None:
    record = HandoffRecord.model_validate(data)
    first = json.dumps(record.to_json_dict(), ensure_ascii=False)
    again = HandoffRecord.model_validate(json.loads(first))
    assert json.dumps(again.to_json_dict(), ensure_ascii=False) == first
    assert_conforms(json.loads(first))
    for key, value in data.items():  # unknown top-level fields survive
        if key.startswith("x_"):
            assert json.loads(first)[key] == value


def test_legacy_schema_id_is_read_and_the_baton_id_written(make_record) -> None:
    record = HandoffRecord.model_validate({**make_record().to_json_dict(), "$schema": LEGACY_SCHEMA_ID})
    assert record.to_json_dict()["$schema"] == SCHEMA_ID
    with pytest.raises(ValidationError, match=r"unknown \$schema"):
        HandoffRecord.model_validate({**make_record().to_json_dict(), "$schema": "https://evil.example/x.json"})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("id", "../../etc/passwd", "must be a UUID"),
        ("id", "not-a-uuid", "must be a UUID"),
        ("created_at", "yesterday", "RFC 3339"),
        ("updated_at", "2026-01-01T00:00:00", "RFC 3339"),
        ("status", "done", "Input should be"),
        ("work", {"title": "", "objective": "x"}, "at least 1 character"),
    ],
)
def test_bad_fields_are_rejected_with_a_reason(make_record, field: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HandoffRecord.model_validate({**make_record().to_json_dict(), field: value})


def test_failed_attempts_are_a_top_level_extension_that_conforms(make_record, assert_conforms) -> None:
    attempt = {"id": "F-001", "attempt": "pin numpy<2", "recorded_at": ids.now_timestamp()}
    record = make_record(failed_attempts=[attempt])
    data = record.to_json_dict()
    assert data["failed_attempts"][0]["id"] == "F-001"
    assert_conforms(data)


def test_generated_schema_is_current() -> None:
    generator = load_generator()
    on_disk = (REPO / "schemas" / "handoff-v0.1.json").read_text(encoding="utf-8")
    assert on_disk == generator.render_schema(), (
        f"schemas/handoff-v0.1.json drifted from the model; run: {generator.REGENERATE_COMMAND}"
    )


def test_generator_check_mode_reports_drift(tmp_path: Path, monkeypatch, capsys) -> None:
    generator = load_generator()
    stale = tmp_path / "schema.json"
    stale.write_text("{}\n")
    monkeypatch.setattr(generator, "SCHEMA_PATH", stale)
    assert generator.main(["--check"]) == 1
    assert "python scripts/generate_schema.py" in capsys.readouterr().err
    assert generator.main([]) == 0
    assert generator.main(["--check"]) == 0
    assert stale.read_text() == generator.render_schema() == generator.render_schema()


def test_generated_schema_accepts_what_we_write_and_rejects_bad_records(make_record) -> None:
    schema = json.loads((REPO / "schemas" / "handoff-v0.1.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    good = make_record(failed_attempts=[{"id": "F-001", "attempt": "x", "recorded_at": ids.now_timestamp()}])
    assert not list(validator.iter_errors(good.to_json_dict()))
    bad = {**good.to_json_dict(), "status": "done"}
    bad.pop("work")
    assert {err.validator for err in validator.iter_errors(bad)} >= {"required", "enum"}


@pytest.mark.parametrize("start", sorted(STATUS_TRANSITIONS))
def test_transition_follows_the_state_machine(make_record, start: str) -> None:
    record = make_record(status=start)
    for target in sorted(STATUS_TRANSITIONS):
        if target in STATUS_TRANSITIONS[start]:
            moved = transition(record, target, at="2030-01-01T00:00:00Z", reason="because")
            assert moved.status == target and moved.updated_at == "2030-01-01T00:00:00Z"
            step = {"from": start, "to": target, "at": moved.updated_at, "reason": "because"}
            assert moved.status_history[-1] == step
            assert content_view(moved) == content_view(record)
            assert record.status == start  # input untouched
        else:
            with pytest.raises(ConflictError, match=re.escape(f"cannot move to {target!r}")):
                transition(record, target)


def test_transition_history_accumulates(make_record) -> None:
    record = transition(transition(make_record(), "ready"), "resumed")
    assert [step["to"] for step in record.status_history] == ["ready", "resumed"]
    assert record.status in IMMUTABLE_STATUSES
