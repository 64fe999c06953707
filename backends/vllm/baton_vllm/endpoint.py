"""Where the vLLM server's /tokenize lives, parsed once at start-up (fail fast on a bad URL)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from baton_engine.tokens.contract import BackendConfigError

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
    """Accept a server root, ``.../v1`` or ``.../tokenize``; /tokenize sits outside /v1 in vLLM.

    Credentials in the URL are refused rather than silently used: they would leak into logs
    of proxies and into our ``source``; the bearer token belongs in ``api_key``.
    """
    text = (url or "").strip()
    if not text:
        raise BackendConfigError(
            "the vllm tokenizer backend needs the server URL: set the tokenizer `url` setting, "
            "e.g. http://127.0.0.1:8000"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BackendConfigError(f"the vllm tokenizer `url` is not a valid URL ({type(exc).__name__})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BackendConfigError("the vllm tokenizer `url` must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise BackendConfigError(
            "the vllm tokenizer `url` must not embed credentials; put the bearer token in `api_key`"
        )
    if parts.query or parts.fragment:
        raise BackendConfigError("the vllm tokenizer `url` must not have a query string or fragment")
    path = parts.path.rstrip("/")
    for suffix in (_TOKENIZE, _V1):
        if path.endswith(suffix):
            path = path[: -len(suffix)].rstrip("/")
            break
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    return Endpoint(root=f"{parts.scheme}://{netloc}{path}", source=f"vllm:{netloc}")
