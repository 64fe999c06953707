"""Where the vLLM server's /tokenize lives, parsed once at start-up (fail fast on a bad URL)."""

from __future__ import annotations

from dataclasses import dataclass

from baton_engine.tokens.http_server import parse_server_url

_TOKENIZE = "/tokenize"
_V1 = "/v1"


@dataclass(frozen=True)
class Endpoint:
    """The server's root URL and the two routes we call; ``source`` is safe to show anywhere."""

    root: str
    source: str

    @property
    def tokenize_url(self) -> str:
        return self.root + _TOKENIZE

    @property
    def models_url(self) -> str:
        return self.root + _V1 + "/models"


def parse_endpoint(url: str | None) -> Endpoint:
    """Accept a server root, ``.../v1`` or ``.../tokenize``; /tokenize sits outside /v1 in vLLM."""
    server = parse_server_url(url, backend="vllm", suffixes=(_TOKENIZE, _V1), example="http://127.0.0.1:8000")
    return Endpoint(root=server.root, source=f"vllm:{server.netloc}")
