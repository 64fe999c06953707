"""Whether a route's server is a llama.cpp llama-server serving the route's model, so it can count for itself, and
the window it serves each request with (its per-slot ``n_ctx``, for ``baton doctor``).

Why: after ``/model`` (or a fallback provider) Hermes may talk to a server Baton was never configured for; if it is
llama-server, its own template and vocabulary count exactly. One GET /v1/models tells: llama-server marks each
model ``owned_by: "llamacpp"``. GET /props states the window: ``default_generation_settings.n_ctx``, ``-c`` divided
by the ``--parallel`` slots. The probes carry no prompt and no credential (a server started with ``--api-key``
answers 401 and is not used: configure it in ``tokenizer_routes`` with its key).
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from baton_engine.tokens.contract import BackendConfigError, CannotCount

from .endpoint import Endpoint, parse_endpoint
from .reply import parse_slot_window, serves_model


def _get(url: str, route: Callable[[Endpoint], str], timeout_seconds: float) -> bytes | None:
    """The body of GET ``route(endpoint)`` of the server at ``url`` when it answers 200; None for anything else."""
    try:
        endpoint: Endpoint = parse_endpoint(url)
    except BackendConfigError:
        return None
    try:
        reply = httpx.get(route(endpoint), timeout=timeout_seconds, follow_redirects=False,
                          headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return None
    return reply.content if reply.status_code == 200 else None


def detect_llamacpp(url: str, model: str | None, timeout_seconds: float) -> bool:
    """True when ``url`` answers GET /v1/models as llama-server serving ``model``; False for anything else."""
    body = _get(url, lambda endpoint: endpoint.models_url, timeout_seconds)
    return body is not None and serves_model(body, model)


def llamacpp_window(url: str, model: str | None, timeout_seconds: float) -> int | None:
    """The per-slot ``n_ctx`` llama-server states in GET /props, when ``url`` is llama-server serving ``model``;
    None for any other server."""
    if not detect_llamacpp(url, model, timeout_seconds):
        return None
    body = _get(url, lambda endpoint: endpoint.props_url, timeout_seconds)
    if body is None:
        return None
    try:
        return parse_slot_window(body)
    except CannotCount:
        return None
