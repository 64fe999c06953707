"""The window a model server serves a model with, as the server itself states it (for ``baton doctor``).

Why: config.yaml's ``context_length`` is what the operator believes; the server's own figure is what it enforces.
An installed backend that knows its server says it (``BackendSpec.window``: vLLM's ``max_model_len``). For the two
servers no installed backend may know yet, one generic read each: llama.cpp's per-slot ``n_ctx`` (GET /props,
``default_generation_settings.n_ctx``: ``-c`` divided by the ``--parallel`` slots) and Ollama's ``num_ctx`` set in
the model's Modelfile (POST /api/show; without one Ollama serves its own default, which it does not state). Every
probe carries no prompt and no credential; anything unexpected is "does not say", never a window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from baton_engine.tokens.plugins import Registry, backend_window


@dataclass(frozen=True)
class ServedWindow:
    """``tokens``: the window; ``said_by``: which server said it and in which field (shown to the user)."""

    tokens: int
    said_by: str


def root_of(url: str) -> str:
    """A server's root from a base URL as Hermes holds it (``http://host:8000/v1`` -> ``http://host:8000``)."""
    root = url.strip().rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _positive(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


def _json(reply: httpx.Response) -> Any:
    if reply.status_code != 200:
        return None
    try:
        return json.loads(reply.content)
    except ValueError:
        return None


def llama_cpp_window(url: str, timeout_seconds: float) -> int | None:
    """llama.cpp's ``n_ctx`` per slot from GET /props; None when the server is not llama.cpp."""
    try:
        data = _json(httpx.get(root_of(url) + "/props", timeout=timeout_seconds, follow_redirects=False))
    except httpx.HTTPError:
        return None
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def ollama_window(url: str, model: str | None, timeout_seconds: float) -> int | None:
    """The ``num_ctx`` of ``model``'s Modelfile from POST /api/show; None when not Ollama or not set."""
    if not model:
        return None
    try:
        data = _json(httpx.post(root_of(url) + "/api/show", json={"model": model}, timeout=timeout_seconds,
                                follow_redirects=False))
    except httpx.HTTPError:
        return None
    parameters = data.get("parameters") if isinstance(data, dict) else None
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return _positive(int(value.strip()))
    return None


def server_window(url: str, model: str | None, timeout_seconds: float,
                  registry: Registry | None = None) -> ServedWindow | None:
    """The window the server at ``url`` states for ``model``: an installed backend's ``window`` first (by name),
    then llama.cpp's /props and Ollama's /api/show; None when no server answers with one."""
    said = backend_window(url, model, timeout_seconds, registry)
    if said is not None:
        return ServedWindow(said[1], f"{said[0]} server")
    found = llama_cpp_window(url, timeout_seconds)
    if found is not None:
        return ServedWindow(found, "llama.cpp server (n_ctx per slot, /props)")
    found = ollama_window(url, model, timeout_seconds)
    if found is not None:
        return ServedWindow(found, "Ollama (num_ctx in the Modelfile, /api/show)")
    return None
