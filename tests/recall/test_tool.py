"""``baton_recall``: one pydantic definition -> schema and validation; JSON answers; never raises."""

from __future__ import annotations

import json

import pytest
from batontest.transcripts import SECRET
from pydantic import ValidationError

from baton_engine.recall import TOOL_NAME, TOOL_SCHEMA, RecallArgs, recall_tool
from baton_engine.tokens.rough import estimate_tokens_rough as rough


def test_the_schema_is_generated_from_the_arguments_model() -> None:
    parameters = TOOL_SCHEMA["parameters"]
    assert TOOL_SCHEMA["name"] == TOOL_NAME == "baton_recall"
    assert set(parameters["properties"]) == set(RecallArgs.model_fields)
    assert parameters["required"] == ["mode"]
    text = json.dumps(parameters)
    assert '"null"' not in text and '"title"' not in text and "anyOf" not in text
    # bounds are RecallArgs' to check, not shown: the schema goes out with every request
    assert "maximum" not in text and "maxLength" not in text
    with pytest.raises(ValidationError):
        RecallArgs.model_validate({"mode": "search", "query": "x", "budget_tokens": 1_000_001})


def test_search_then_expand_round_trip(source) -> None:
    found = recall_tool(source, {"mode": "search", "query": "settle.py", "limit": 2}, rough)
    assert found["ok"] and found["mode"] == "search" and len(found["hits"]) == 2
    hit = found["hits"][0]
    page = recall_tool(source, {"mode": "expand", "ref": hit["ref"], "budget_tokens": 12, "around": hit["line"]}, rough)
    assert page["ok"] and page["tokens"] <= 12 and page["first_line"] <= hit["line"] <= page["last_line"]
    json.dumps([found, page])  # JSON-able


@pytest.mark.parametrize(("args", "kind", "words"), [
    ({"mode": "search", "query": ""}, "input_error", "non-empty"),
    ({"mode": "search"}, "input_error", "needs a 'query'"),
    ({"mode": "search", "query": "x" * 1001}, "input_error", "at most 1000"),
    ({"mode": "expand"}, "input_error", "needs a 'ref'"),
    ({"mode": "expand", "ref": "msg-0000000000000000"}, "not_found", "no compacted message"),
    ({"mode": "expand", "ref": "msg-1", "budget_tokens": 0}, "input_error", "budget_tokens"),
    ({"mode": "expand", "ref": "msg-1", "budget_tokens": 1_000_001}, "input_error", "budget_tokens"),
    ({"mode": "recall"}, "input_error", "'search' or 'expand'"),
    ({"mode": "search", "query": "x", "extra": 1}, "input_error", "extra"),
    ("not an object", "input_error", "JSON object"),
])
def test_bad_input_gets_a_clear_error(source, args, kind: str, words: str) -> None:
    answer = recall_tool(source, args, rough)
    assert answer["ok"] is False and answer["error"]["kind"] == kind and words in answer["error"]["message"]


def test_errors_never_echo_a_secret(source) -> None:
    answer = recall_tool(source, {"mode": "search", SECRET: 1}, rough)
    assert answer["ok"] is False and SECRET not in json.dumps(answer)
    echoed = recall_tool(source, {"mode": "search", "query": f"key {SECRET}"}, rough)
    assert SECRET not in json.dumps(echoed)


def test_a_failing_source_is_an_internal_error_not_an_exception() -> None:
    class Broken:
        def entries(self):
            raise OSError("database is locked: /secret/path")

        def get(self, ref):
            raise OSError("boom")

    answer = recall_tool(Broken(), {"mode": "search", "query": "anything"}, rough)
    assert answer["error"]["kind"] == "internal_error" and "/secret/path" not in answer["error"]["message"]
