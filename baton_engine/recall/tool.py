"""``baton_recall``: the tool-facing entry point (Hermes engine tool, MCP tool), one JSON contract.

The arguments are ONE pydantic model; the tool's JSON schema is generated from it (no titles, no
``null`` types: some providers reject them), so the schema and the validation cannot drift. Answers
follow ``results``: ``{"ok": true, ...}`` or ``{"ok": false, "error": {"kind", "message"}}``;
nothing raises, and every string in an answer is redacted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from baton_engine.embedding import Embedder
from baton_engine.messages.markers import RECALL_TOOL
from baton_engine.errors import UserInputError
from baton_engine.handoff.redact import redact_text
from baton_engine.recall.source import RecallSource
from baton_engine.recall.expand import MAX_BUDGET_TOKENS, MAX_REF_CHARS, expand
from baton_engine.recall.query import MAX_QUERY_CHARS
from baton_engine.recall.search import MAX_LIMIT, CountText, Hit, counted, uncounted
from baton_engine.results import call, dumps

TOOL_NAME = RECALL_TOOL
MAX_OFFSET = MAX_LIMIT - 1
SEARCH_BUDGET_TOKENS = 600
EXPAND_BUDGET_TOKENS = 2000
TOOL_DESCRIPTION = (
    "Find what compaction took out of this conversation and page it back. mode=search: `query` in your own words; "
    "hits carry matching lines, a ref and the message's cost; found=false: probably not there. mode=expand: the "
    "message `ref` (or its lines `around` one)."
)


class RecallArgs(BaseModel):
    """The arguments of ``baton_recall``. The descriptions are short on purpose: the schema goes out with every
    request (docs/hermes.md, "What Baton adds to every request"); the bounds are checked here, not shown."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["search", "expand"]
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)
    limit: int = Field(default=8, ge=1, le=MAX_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="a previous next_offset")
    ref: str | None = Field(default=None, max_length=MAX_REF_CHARS)
    budget_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS, description="answer size in tokens")
    around: int | None = Field(default=None, ge=1, description="a hit's line")


_SHOWN = ("type", "enum", "description", "properties", "required")  # what a tool schema needs to be called right


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
    """The arguments' JSON schema for tool calling: types, enums and the short descriptions (no bounds, no
    defaults: ``RecallArgs`` checks them and an error answer says which one a call broke)."""
    schema = RecallArgs.model_json_schema(schema_generator=_ToolSchema)
    properties = {name: {key: prop[key] for key in _SHOWN if key in prop}
                  for name, prop in schema["properties"].items()}
    return {"type": "object", "properties": properties, "required": schema["required"]}


TOOL_SCHEMA: dict[str, Any] = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": parameters_schema()}


def _parse(args: Any) -> RecallArgs:
    if not isinstance(args, dict):
        raise UserInputError("baton_recall arguments must be a JSON object")
    try:
        return RecallArgs.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}" for err in exc.errors())
        raise UserInputError(redact_text(problems)[0]) from None


def _packed(head: dict[str, Any], hits: Iterable[Hit], budget: int, count_text: CountText) -> dict[str, Any]:
    """``head`` with as many of ``hits`` (in order; taken one at a time, so a lazy iterable counts only those tried)
    as the budget holds, counted on the answer's JSON as the tools serialise it (``results.dumps``); the first
    hit always goes in, its snippet cut to whole lines that fit when it alone is too large."""
    answer = {**head, "hits": []}
    for hit in hits:
        trial = {**answer, "hits": [*answer["hits"], hit.to_dict()]}
        if count_text(dumps(trial)) <= budget:
            answer = trial
            continue
        if not answer["hits"]:
            answer = _cut(trial, hit, budget, count_text)
        break
    return answer


def _cut(trial: dict[str, Any], hit: Hit, budget: int, count_text: CountText) -> dict[str, Any]:
    """``trial`` (one hit) with the hit's snippet cut to the whole lines, else the prefix of its first line, that
    fit ``budget`` (empty when not even the hit's other fields fit)."""
    shown = trial["hits"][0]
    lines = hit.snippet.split("\n")
    while len(lines) > 1 and count_text(dumps(trial)) > budget:
        lines.pop()
        shown["snippet"], shown["last_line"] = "\n".join(lines), hit.first_line + len(lines) - 1
    line, low, high = shown["snippet"], 0, len(shown["snippet"])
    if count_text(dumps(trial)) <= budget:
        return trial
    while low < high:  # the longest prefix of the one line that fits
        middle = (low + high + 1) // 2
        shown["snippet"] = line[:middle]
        low, high = (middle, high) if count_text(dumps(trial)) <= budget else (low, middle - 1)
    shown["snippet"] = line[:low]
    return trial


def _search(source: RecallSource, parsed: RecallArgs, count_text: CountText,
            embedder: Embedder | None) -> dict[str, Any]:
    if parsed.query is None:
        raise UserInputError("mode=search needs a 'query'")
    hits = uncounted(source, parsed.query, min(MAX_LIMIT, parsed.offset + parsed.limit), embedder)
    page = hits[parsed.offset:]
    head = {"ok": True, "mode": "search", "query": redact_text(parsed.query)[0],
            "found": any(not hit.weak for hit, _entry in page), "next_offset": MAX_LIMIT}  # counted as if more
    answer = _packed(head, (counted(hit, entry, count_text) for hit, entry in page),  # a message counted when tried
                     parsed.budget_tokens or SEARCH_BUDGET_TOKENS, count_text)
    shown = parsed.offset + len(answer["hits"])
    if shown < len(hits) or (len(hits) == parsed.offset + parsed.limit and shown < MAX_LIMIT):
        answer["next_offset"] = shown
    else:
        del answer["next_offset"]
    return answer


def _run(source: RecallSource, args: Any, count_text: CountText, embedder: Embedder | None) -> dict[str, Any]:
    parsed = _parse(args)
    if parsed.mode == "search":
        return _search(source, parsed, count_text, embedder)
    if parsed.ref is None:
        raise UserInputError("mode=expand needs a 'ref' (from a search hit)")
    expansion = expand(source, parsed.ref, parsed.budget_tokens or EXPAND_BUDGET_TOKENS, count_text, parsed.around,
                       parsed.query)
    return {"ok": True, "mode": "expand", **expansion.to_dict()}


def recall_tool(source: RecallSource, args: Any, count_text: CountText,
                embedder: Embedder | None = None) -> dict[str, Any]:
    """Answer one ``baton_recall`` call (hybrid ranking with an ``embedder``, else lexical); never raises (errors
    are ``{"ok": false, ...}`` dicts)."""
    result, _code = call(_run, source, args, count_text, embedder)
    return result
