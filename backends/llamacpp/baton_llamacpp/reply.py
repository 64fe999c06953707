"""Strict readers for llama-server's replies: a wrong type is a broken server, never a count."""

from __future__ import annotations

from typing import Any

from baton_engine.tokens.contract import CannotCount
from baton_engine.tokens.http_server import json_object

OWNED_BY = "llamacpp"  # what llama-server's GET /v1/models says of each model it serves


def parse_prompt(body: bytes) -> str:
    """The prompt text of a POST /apply-template reply (``{"prompt": str}``)."""
    prompt = _json_object(body, "/apply-template").get("prompt")
    if not isinstance(prompt, str):
        raise CannotCount(f"llama-server /apply-template reply has an invalid 'prompt' ({type(prompt).__name__})")
    return prompt


def parse_token_count(body: bytes) -> int:
    """How many tokens a POST /tokenize reply lists (``{"tokens": [int, ...]}``)."""
    tokens = _json_object(body, "/tokenize").get("tokens")
    if not isinstance(tokens, list) or not all(type(token) is int for token in tokens):
        raise CannotCount(f"llama-server /tokenize reply has an invalid 'tokens' ({type(tokens).__name__})")
    return len(tokens)


def parse_slot_window(body: bytes) -> int:
    """The per-slot window of a GET /props reply: ``default_generation_settings.n_ctx`` (``-c`` over
    ``--parallel`` slots), what a request is refused against."""
    settings = _json_object(body, "/props").get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if type(n_ctx) is not int or n_ctx < 1:
        raise CannotCount(f"llama-server /props reply has an invalid 'n_ctx' ({type(n_ctx).__name__})")
    return n_ctx


def serves_model(body: bytes, model: str | None) -> bool:
    """Whether a GET /v1/models reply is llama-server's serving ``model``: named by id or alias, or the only model
    (a single-model llama-server answers every model name with it); any model when None."""
    try:
        data = _json_object(body, "/v1/models")
    except CannotCount:
        return False
    entries = data.get("data")
    if not isinstance(entries, list):
        return False
    ours = [entry for entry in entries if isinstance(entry, dict) and entry.get("owned_by") == OWNED_BY]
    if not ours:
        return False
    if model is None or len(entries) == 1:
        return True
    return any(entry.get("id") == model or (isinstance(entry.get("aliases"), list) and model in entry["aliases"])
               for entry in ours)


def _json_object(body: bytes, route: str) -> dict[str, Any]:
    return json_object(body, server="llama-server", route=route)
