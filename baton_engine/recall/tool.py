"""``baton_recall``: the tool-facing entry point (Hermes engine tool, MCP tool), one JSON contract.

The arguments are ONE pydantic model; the tool's JSON schema is generated from it (no titles, no
``null`` types: some providers reject them), so the schema and the validation cannot drift. Answers
follow ``results``: ``{"ok": true, ...}`` or ``{"ok": false, "error": {"kind", "message"}}``;
nothing raises, and every string in an answer is redacted.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from baton_engine.messages.markers import RECALL_TOOL
from baton_engine.errors import UserInputError
from baton_engine.handoff.redact import redact_text
from baton_engine.recall.source import RecallSource
from baton_engine.recall.expand import MAX_BUDGET_TOKENS, MAX_REF_CHARS, expand
from baton_engine.recall.query import MAX_QUERY_CHARS
from baton_engine.recall.search import MAX_LIMIT, CountText, search
from baton_engine.results import call

TOOL_NAME = RECALL_TOOL
TOOL_DESCRIPTION = (
    "Search what was compacted out of THIS conversation and page it back in. mode=search: ranked hits "
    "(ref, role, tool, snippet, line, token cost) for words, identifiers, paths or \"quoted phrases\". "
    "mode=expand: the message `ref` in full if it fits budget_tokens, else the lines around `around` "
    "(or around the first match of `query`)."
)


class RecallArgs(BaseModel):
    """The arguments of ``baton_recall``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["search", "expand"] = Field(description="search: find messages; expand: page one back in")
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS,
                              description="search (required) / expand (optional): what to look for")
    limit: int = Field(default=8, ge=1, le=MAX_LIMIT, description="search: how many hits")
    ref: str | None = Field(default=None, max_length=MAX_REF_CHARS, description="expand: a hit's ref")
    budget_tokens: int = Field(default=2000, ge=1, le=MAX_BUDGET_TOKENS,
                               description="expand: the most tokens the returned text may cost")
    around: int | None = Field(default=None, ge=1, description="expand: centre on this line (a hit's line)")


class _ToolSchema(GenerateJsonSchema):
    """Plain JSON schema for tool calling: optional fields are just not required."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default", ...) is None:
            generated.pop("default")
        return generated


def parameters_schema() -> dict[str, Any]:
    schema = RecallArgs.model_json_schema(schema_generator=_ToolSchema)
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


TOOL_SCHEMA: dict[str, Any] = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": parameters_schema()}


def _parse(args: Any) -> RecallArgs:
    if not isinstance(args, dict):
        raise UserInputError("baton_recall arguments must be a JSON object")
    try:
        return RecallArgs.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}" for err in exc.errors())
        raise UserInputError(redact_text(problems)[0]) from None


def _run(source: RecallSource, args: Any, count_text: CountText) -> dict[str, Any]:
    parsed = _parse(args)
    if parsed.mode == "search":
        if parsed.query is None:
            raise UserInputError("mode=search needs a 'query'")
        hits = search(source, parsed.query, parsed.limit, count_text)
        return {"ok": True, "mode": "search", "query": redact_text(parsed.query)[0],
                "hits": [hit.to_dict() for hit in hits]}
    if parsed.ref is None:
        raise UserInputError("mode=expand needs a 'ref' (from a search hit)")
    expansion = expand(source, parsed.ref, parsed.budget_tokens, count_text, parsed.around, parsed.query)
    return {"ok": True, "mode": "expand", **expansion.to_dict()}


def recall_tool(source: RecallSource, args: Any, count_text: CountText) -> dict[str, Any]:
    """Answer one ``baton_recall`` call; never raises (errors are ``{"ok": false, ...}`` dicts)."""
    result, _code = call(_run, source, args, count_text)
    return result
