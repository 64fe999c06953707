"""Where a llama-server's routes live, parsed once at start-up (fail fast on a bad URL)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from baton_engine.tokens.contract import BackendConfigError

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
    """Accept a server root, ``.../v1`` or a route; llama-server serves /tokenize and /props outside /v1.

    Credentials in the URL are refused: they would reach proxies' logs and ``source``; the key belongs in
    ``api_key`` (llama-server's ``--api-key`` guards /tokenize and /apply-template too).
    """
    text = (url or "").strip()
    if not text:
        raise BackendConfigError(
            "the llamacpp tokenizer backend needs the llama-server URL: set the tokenizer `url` setting, "
            "e.g. http://127.0.0.1:8080"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BackendConfigError(f"the llamacpp tokenizer `url` is not a valid URL ({type(exc).__name__})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BackendConfigError("the llamacpp tokenizer `url` must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise BackendConfigError(
            "the llamacpp tokenizer `url` must not embed credentials; put the key in `api_key`"
        )
    if parts.query or parts.fragment:
        raise BackendConfigError("the llamacpp tokenizer `url` must not have a query string or fragment")
    path = parts.path.rstrip("/")
    for suffix in _SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)].rstrip("/")
            break
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    return Endpoint(root=f"{parts.scheme}://{netloc}{path}", source=f"llamacpp:{netloc}")
