"""The window a model server serves a model with, as the server itself states it (``baton doctor``, and the check
of a prompt size reported far below Baton's count: ``tokens.verify.truncated``).

Why: config.yaml's ``context_length`` is what the operator believes; the server's own figure is what it enforces.
An installed backend that knows its server says it (``BackendSpec.window``: vLLM's ``max_model_len``, llama.cpp's
per-slot ``n_ctx``). Ollama has no backend (it exposes no tokenizer route), so its read is here:

- GET /api/ps: ``context_length`` of each loaded model (Ollama 0.9.7+), what the runner was started with: a
  Modelfile's ``num_ctx``, else ``OLLAMA_CONTEXT_LENGTH``, else Ollama's own default (since 0.15.5: 4,096 below
  24 GiB of VRAM, 32,768 below 48 GiB, 262,144 above, its docs/context-length.mdx; 4,096 from 0.6.7, 2,048
  before), capped at the model's trained length;
- else POST /api/show: the Modelfile's ``num_ctx`` (``parameters``), capped at ``model_info["<arch>.context_length"]``
  as Ollama caps it (llm/server.go). The trained length alone is NOT what Ollama serves: without ``num_ctx`` it
  serves its default, which /api/show does not state.

A request's own ``options.num_ctx`` is honoured by the native /api/chat only; /v1/chat/completions ignores it
(openai/openai.go reads no ``options``), which is why Hermes' ``model.ollama_num_ctx`` (sent in ``extra_body``)
does not raise the window there. Every probe carries no prompt and no credential; anything unexpected is "does not
say", never a window.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from baton_engine.tokens.plugins import Registry, backend_window

OLLAMA_FIX = ("raise Ollama's window: `PARAMETER num_ctx N` in a Modelfile (`ollama create`), or "
              "`OLLAMA_CONTEXT_LENGTH=N ollama serve`; /v1/chat/completions ignores a request's num_ctx "
              "(Hermes' model.ollama_num_ctx), only the native /api/chat honours it")


@dataclass(frozen=True)
class ServedWindow:
    """``tokens``: the window; ``said_by``: which server said it and in which field (shown to the user)."""

    tokens: int
    said_by: str

    @property
    def ollama(self) -> bool:
        return self.said_by.startswith("Ollama")


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


def _same_model(listed: Any, model: str) -> bool:
    """Ollama names ``qwen3`` and ``qwen3:latest`` the same model."""
    return isinstance(listed, str) and listed.removesuffix(":latest") == model.removesuffix(":latest")


def ps_context_length(data: Any, model: str) -> int | None:
    """The ``context_length`` GET /api/ps states for the loaded ``model``; None when it is not loaded (or the
    server is older than 0.9.7, which does not state it)."""
    models = data.get("models") if isinstance(data, Mapping) else None
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, Mapping) and (_same_model(entry.get("name"), model)
                                           or _same_model(entry.get("model"), model)):
            return _positive(entry.get("context_length"))
    return None


def show_num_ctx(data: Any) -> int | None:
    """The Modelfile's ``num_ctx`` in a POST /api/show reply, capped at the model's trained
    ``<arch>.context_length`` (Ollama serves no more); None without a ``num_ctx``."""
    parameters = data.get("parameters") if isinstance(data, Mapping) else None
    if not isinstance(parameters, str):
        return None
    num_ctx = None
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            num_ctx = _positive(int(value.strip()))
    info = data.get("model_info")
    trained = None
    if num_ctx is not None and isinstance(info, Mapping):
        trained = _positive(info.get(f"{info.get('general.architecture')}.context_length"))
    return min(num_ctx, trained) if num_ctx is not None and trained is not None else num_ctx


def ollama_window(url: str, model: str | None, timeout_seconds: float) -> ServedWindow | None:
    """What Ollama at ``url`` runs ``model`` with (/api/ps, else /api/show); None when not Ollama or unstated."""
    if not model:
        return None
    root = root_of(url)
    try:
        loaded = ps_context_length(_json(httpx.get(root + "/api/ps", timeout=timeout_seconds,
                                                   follow_redirects=False)), model)
        if loaded is not None:
            return ServedWindow(loaded, "Ollama (context_length of the loaded model, /api/ps)")
        shown = show_num_ctx(_json(httpx.post(root + "/api/show", json={"model": model}, timeout=timeout_seconds,
                                              follow_redirects=False)))
    except httpx.HTTPError:
        return None
    return ServedWindow(shown, "Ollama (num_ctx in the Modelfile, /api/show)") if shown is not None else None


def server_window(url: str, model: str | None, timeout_seconds: float,
                  registry: Registry | None = None) -> ServedWindow | None:
    """The window the server at ``url`` states for ``model``: an installed backend's ``window`` first (by name),
    then Ollama's; None when no server answers with one."""
    said = backend_window(url, model, timeout_seconds, registry)
    if said is not None:
        return ServedWindow(said[1], f"{said[0]} server")
    return ollama_window(url, model, timeout_seconds)
