"""Whether a route's server is a vLLM server serving the route's model, so that it can count for itself, and the
window it serves the model with (``max_model_len``, for ``baton doctor``).

Why: after ``/model`` (or a fallback provider) Hermes may talk to a server Baton was never configured for; if it is
vLLM, its /tokenize counts exactly, chat template included. One GET /v1/models tells: vLLM marks each served model
``owned_by: "vllm"``. The probe carries no prompt and no credential (a server behind an API key answers 401 and is
not used: configure it in ``tokenizer_routes`` with its key).
"""

from __future__ import annotations

import httpx

from baton_engine.tokens.contract import BackendConfigError, CannotCount

from .endpoint import parse_endpoint
from .reply import parse_models_max_model_len, serves_model


def _models(url: str, timeout_seconds: float) -> bytes | None:
    """The body of GET /v1/models (200 only); None when there is no such answer."""
    try:
        endpoint = parse_endpoint(url)
    except BackendConfigError:
        return None
    try:
        reply = httpx.get(endpoint.models_url, timeout=timeout_seconds, follow_redirects=False,
                          headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return None
    return reply.content if reply.status_code == 200 else None


def detect_vllm(url: str, model: str | None, timeout_seconds: float) -> bool:
    """True when ``url`` answers GET /v1/models as vLLM serving ``model``; False for anything else."""
    body = _models(url, timeout_seconds)
    return body is not None and serves_model(body, model)


def vllm_window(url: str, model: str | None, timeout_seconds: float) -> int | None:
    """The ``max_model_len`` a vLLM server states for ``model`` (the only one served, when None) in GET
    /v1/models; None when ``url`` is not vLLM serving it."""
    body = _models(url, timeout_seconds)
    if body is None or not serves_model(body, model):
        return None
    try:
        return parse_models_max_model_len(body, model)
    except CannotCount:
        return None
