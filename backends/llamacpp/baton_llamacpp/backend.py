"""Exact counts from a llama.cpp llama-server: its own chat template (/apply-template) and vocabulary (/tokenize).

The two calls are what the server itself does with a chat request (render, then tokenize with special tokens), so
the count is the prompt size the server will see and refuse against. The window is the per-slot window from
GET /props (``-c`` over ``--parallel`` slots), asked once per connection. A count is bounded as a whole by
``timeout_seconds``; the HTTP client, its worker threads and the deadline are ``baton_engine.tokens.http_server``'s
(shared with the vLLM backend), dropped on fork, deepcopy and pickle. Every failure is a ``CannotCount`` whose reason names no prompt text, URL or secret.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from baton_engine.tokens.contract import (
    CannotCount,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)
from baton_engine.tokens.http_server import ServerConnection, json_content

from .endpoint import parse_endpoint
from .payload import template_payload, tokenize_payload
from .reply import parse_prompt, parse_slot_window, parse_token_count

log = logging.getLogger("baton_llamacpp")

_T = TypeVar("_T")


class LlamaCppBackend(TokenizerBackend):
    """Counts through llama-server's /apply-template + /tokenize; the window is its per-slot ``n_ctx``."""

    remote = True

    def __init__(self, config: TokenizerConfig) -> None:
        self._config = config
        self._http = ServerConnection(config, backend="llamacpp", server="llama-server",
                                      distribution="baton-engine-llamacpp")
        self._endpoint = parse_endpoint(config.url)
        self._window: int | None = None
        self._window_asked = False
        self._warned_window: int | None = None

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> LlamaCppBackend:
        return cls(config)

    # -- contract -------------------------------------------------------------------------

    @property
    def source(self) -> str:
        return self._endpoint.source

    def count_chat(self, request: ChatRequest) -> TokenCount:
        payload = template_payload(request, self._config.model)

        def count(client: httpx.Client) -> int:
            prompt = parse_prompt(self._post(client, self._endpoint.apply_template_url, payload))
            body = tokenize_payload(prompt, self._config.model, special=True)
            return parse_token_count(self._post(client, self._endpoint.tokenize_url, body))

        return self._counted(count)

    def count_text(self, text: str) -> TokenCount:
        body = tokenize_payload(text, self._config.model, special=False)
        return self._counted(lambda client: parse_token_count(self._post(client, self._endpoint.tokenize_url, body)))

    @property
    def max_model_len(self) -> int | None:
        """The per-slot window from GET /props (asked once per connection; None when unknown)."""
        if not self._window_asked:
            try:
                self._bounded(self._ask_window)
            except CannotCount as exc:
                log.debug("llama-server window unknown: %s", exc)
        return self._window

    def clear_cache(self) -> None:
        """Nothing to forget: counts are cached by the counter, not here."""

    def close(self) -> None:
        self._http.close()

    # -- copying: never copy sockets, threads or locks ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self._config, "window": self._window}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]
        self._window = state["window"]
        self._window_asked = state["window"] is not None

    def __repr__(self) -> str:
        return (
            f"LlamaCppBackend(source={self.source!r}, model={self._config.model!r}, "
            f"timeout_seconds={self._config.timeout_seconds!r})"
        )

    # -- counting ---------------------------------------------------------------------------

    def _counted(self, count: Callable[[httpx.Client], int]) -> TokenCount:
        def job(client: httpx.Client) -> int:
            if not self._window_asked:
                self._ask_window(client)
            return count(client)

        tokens = self._bounded(job)
        return TokenCount(tokens=tokens, exact=True, source=self.source, max_model_len=self._window)

    def _ask_window(self, client: httpx.Client) -> None:
        """GET /props once: a server without it (a proxy that forwards only some routes) still counts."""
        self._window_asked = True
        try:
            window = parse_slot_window(self._get(client, self._endpoint.props_url))
        except CannotCount as exc:
            log.warning("llama-server window unknown (%s); counts stay exact", exc)
            return
        self._window = window
        configured = self._config.context_length
        if configured is not None and configured != window and self._warned_window != window:
            self._warned_window = window
            log.warning(
                "llama-server per-slot window n_ctx %d differs from the configured context_length %d (its -c is "
                "shared by --parallel slots); counts stay exact, budgets use the smaller window %d",
                window, configured, min(window, configured),
            )

    # -- HTTP -------------------------------------------------------------------------------

    def _bounded(self, job: Callable[[httpx.Client], _T]) -> _T:
        """``job``'s calls (a count is two requests), answered within ``timeout_seconds`` together or abandoned."""
        return self._http.bounded(job, unanswered=self._forget_window)

    def _forget_window(self) -> None:
        """A server that stopped answering may come back restarted with another -c/--parallel: ask again."""
        self._window_asked = False

    def _post(self, client: httpx.Client, url: str, payload: dict[str, Any]) -> bytes:
        content = json_content(payload)
        response = client.post(url, content=content, headers={"Content-Type": "application/json"})
        return _ok(response, url.rsplit("/", 1)[1])

    def _get(self, client: httpx.Client, url: str) -> bytes:
        return _ok(client.get(url), url.rsplit("/", 1)[1])


def _ok(response: httpx.Response, route: str) -> bytes:
    """The body of a 200; otherwise the failure by status and llama.cpp's error type (never its message, which may
    quote the request)."""
    status = response.status_code
    if status == 200:
        return response.content
    kind = _error_type(response.content)
    if status in (401, 403):
        raise CannotCount(f"llama-server refused /{route} (HTTP {status}); check the tokenizer `api_key`")
    if status == 404:
        raise CannotCount(f"llama-server has no /{route} route or does not serve the model (HTTP 404)")
    if status == 400 or (status == 500 and route == "apply-template"):
        # the server reads this request as chat completions would, and rejects it (400), or its chat template
        # raised on it (500): the request cannot be counted, the server is healthy
        raise RequestNotCountable(f"llama-server rejected the request at /{route} (HTTP {status}{kind})")
    raise CannotCount(f"llama-server answered HTTP {status} at /{route}{kind}")


def _error_type(body: bytes) -> str:
    """``", <type>"`` from llama.cpp's error body ``{"error": {"type": ...}}`` (an enum name), else ""."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return ""
    kind = error.get("type") if isinstance(error, dict) else None
    return f", {kind}" if isinstance(kind, str) and kind.replace("_", "").isalnum() and len(kind) < 64 else ""
