"""Whether a route's server is a llama.cpp llama-server serving the route's model, so it can count for itself.

Why: after ``/model`` (or a fallback provider) Hermes may talk to a server Baton was never configured for; if it is
llama-server, its own template and vocabulary count exactly. One GET /v1/models tells: llama-server marks each
model ``owned_by: "llamacpp"``. The probe carries no prompt and no credential (a server started with ``--api-key``
answers 401 and is not used: configure it in ``tokenizer_routes`` with its key).
"""

from __future__ import annotations

import httpx

from baton_engine.tokens.contract import BackendConfigError

from .endpoint import parse_endpoint
from .reply import serves_model


def detect_llamacpp(url: str, model: str | None, timeout_seconds: float) -> bool:
    """True when ``url`` answers GET /v1/models as llama-server serving ``model``; False for anything else."""
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
