"""Strict readers for vLLM's replies: a wrong type is a broken server, never a count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baton_engine.tokens.contract import CannotCount
from baton_engine.tokens.http_server import json_object


@dataclass(frozen=True)
class TokenizeReply:
    count: int
    max_model_len: int


def parse_tokenize_reply(body: bytes) -> TokenizeReply:
    data = _json_object(body, "/tokenize")
    return TokenizeReply(
        count=_int_field(data, "count", minimum=0, route="/tokenize"),
        max_model_len=_int_field(data, "max_model_len", minimum=1, route="/tokenize"),
    )


def parse_models_max_model_len(body: bytes, model: str | None) -> int | None:
    """max_model_len of the named model (or the only one served) from GET /v1/models."""
    data = _json_object(body, "/v1/models")
    entries = data.get("data")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CannotCount("vLLM /v1/models reply has no data list")
    if model is not None:
        entries = [e for e in entries if e.get("id") == model]
    if len(entries) != 1:
        return None
    return _int_field(entries[0], "max_model_len", minimum=1, route="/v1/models")


def serves_model(body: bytes, model: str | None) -> bool:
    """Whether a GET /v1/models reply is vLLM's (``owned_by: "vllm"``) and lists ``model`` (any, when None)."""
    try:
        data = _json_object(body, "/v1/models")
    except CannotCount:
        return False
    entries = data.get("data")
    if not isinstance(entries, list):
        return False
    return any(isinstance(entry, dict) and entry.get("owned_by") == "vllm"
               and (model is None or entry.get("id") == model) for entry in entries)


def _json_object(body: bytes, route: str) -> dict[str, Any]:
    return json_object(body, server="vLLM", route=route)


def _int_field(data: dict[str, Any], key: str, *, minimum: int, route: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CannotCount(f"vLLM {route} reply has an invalid {key!r} ({type(value).__name__})")
    return value
