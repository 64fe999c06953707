"""Whether a route's server is a vLLM server serving the route's model, so that it can count for itself.

Why: after ``/model`` (or a fallback provider) Hermes may talk to a server Baton was never configured for; if it is
vLLM, its /tokenize counts exactly, chat template included. One GET /v1/models tells: vLLM marks each served model
``owned_by: "vllm"``. The probe carries no prompt and no credential (a server behind an API key answers 401 and is
not used: configure it in ``tokenizer_routes`` with its key).
"""

from __future__ import annotations

import httpx

from baton_engine.tokens.contract import BackendConfigError

from .endpoint import parse_endpoint
from .reply import serves_model


def detect_vllm(url: str, model: str | None, timeout_seconds: float) -> bool:
    """True when ``url`` answers GET /v1/models as vLLM serving ``model``; False for anything else."""
    try:
        endpoint = parse_endpoint(url)
    except BackendConfigError:
        return False
    try:
        reply = httpx.get(endpoint.models_url, timeout=timeout_seconds, follow_redirects=False,
                          headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return False
    return reply.status_code == 200 and serves_model(reply.content, model)
