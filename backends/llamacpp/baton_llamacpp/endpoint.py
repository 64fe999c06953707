"""Where a llama-server's routes live, parsed once at start-up (fail fast on a bad URL)."""

from __future__ import annotations

from dataclasses import dataclass

from baton_engine.tokens.http_server import parse_server_url

# What a user may paste: the server root, its OpenAI base (/v1) or one of the routes the backend calls.
_SUFFIXES = ("/tokenize", "/apply-template", "/props", "/v1")


@dataclass(frozen=True)
class Endpoint:
    """The server's root URL and the routes called; ``source`` is safe to show anywhere."""

    root: str
    source: str

    @property
    def apply_template_url(self) -> str:
        return self.root + "/apply-template"

    @property
    def tokenize_url(self) -> str:
        return self.root + "/tokenize"

    @property
    def props_url(self) -> str:
        return self.root + "/props"

    @property
    def models_url(self) -> str:
        return self.root + "/v1/models"


def parse_endpoint(url: str | None) -> Endpoint:
    """Accept a server root, ``.../v1`` or a route; llama-server serves /tokenize and /props outside /v1
    (``--api-key`` guards /tokenize and /apply-template too: the key belongs in ``api_key``)."""
    server = parse_server_url(url, backend="llamacpp", suffixes=_SUFFIXES, example="http://127.0.0.1:8080")
    return Endpoint(root=server.root, source=f"llamacpp:{server.netloc}")
