"""Exact counts from a llama.cpp llama-server: its own chat template (/apply-template) and vocabulary (/tokenize).

The two calls are what the server itself does with a chat request (render, then tokenize with special tokens), so
the count is the prompt size the server will see and refuse against. The window is the per-slot window from
GET /props (``-c`` over ``--parallel`` slots), asked once per connection. A count is bounded as a whole by
``timeout_seconds``; the HTTP client and its worker threads are created lazily and dropped on fork, deepcopy and
pickle. Every failure is a ``CannotCount`` whose reason names no prompt text, URL or secret.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx

from baton_engine.tokens.contract import (
    BackendConfigError,
    CannotCount,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)

from .endpoint import parse_endpoint
from .payload import template_payload, tokenize_payload
from .reply import parse_prompt, parse_slot_window, parse_token_count

log = logging.getLogger("baton_llamacpp")

# Concurrent in-flight counts (and pooled keep-alive connections) per backend, as the vllm backend.
_WORKERS = 8
_LIVE: weakref.WeakSet[LlamaCppBackend] = weakref.WeakSet()
_T = TypeVar("_T")


def _user_agent() -> str:
    try:
        return f"baton-engine-llamacpp/{version('baton-engine-llamacpp')}"
    except PackageNotFoundError:
        return "baton-engine-llamacpp"


@dataclass
class _Connection:
    client: httpx.Client
    workers: ThreadPoolExecutor


class LlamaCppBackend(TokenizerBackend):
    """Counts through llama-server's /apply-template + /tokenize; the window is its per-slot ``n_ctx``."""

    remote = True

    def __init__(self, config: TokenizerConfig) -> None:
        timeout = config.timeout_seconds
        valid = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        if not valid or not math.isfinite(timeout) or timeout <= 0:
            raise BackendConfigError("the llamacpp tokenizer `timeout_seconds` must be a finite number > 0")
        self._config = config
        self._endpoint = parse_endpoint(config.url)
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._window: int | None = None
        self._window_asked = False
        self._warned_window: int | None = None
        _LIVE.add(self)

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
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.workers.shutdown(wait=False, cancel_futures=True)
            connection.client.close()

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

    def _forget_connection_after_fork(self) -> None:
        """In a forked child the parent's sockets, threads and lock state are not ours."""
        self._lock = threading.Lock()
        self._connection = None

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

    def _connect(self) -> _Connection:
        with self._lock:
            if self._connection is None:
                headers = {"Accept": "application/json", "User-Agent": self._config.user_agent or _user_agent()}
                if self._config.api_key:
                    headers["Authorization"] = f"Bearer {self._config.api_key}"
                self._connection = _Connection(
                    client=httpx.Client(
                        headers=headers,
                        timeout=httpx.Timeout(self._config.timeout_seconds),
                        limits=httpx.Limits(max_connections=_WORKERS, max_keepalive_connections=_WORKERS),
                        follow_redirects=False,
                    ),
                    workers=ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="baton-llamacpp"),
                )
            return self._connection

    def _bounded(self, job: Callable[[httpx.Client], _T]) -> _T:
        """``job``'s calls, answered within ``timeout_seconds`` together or abandoned.

        httpx bounds each phase of one request but not their sum (a server that dribbles bytes holds a read open),
        and a count is two requests: the job runs on a worker and the caller waits at most the timeout.
        """
        connection = self._connect()
        timeout = self._config.timeout_seconds
        try:
            future = connection.workers.submit(job, connection.client)
        except RuntimeError as exc:  # closed concurrently
            raise CannotCount(f"llamacpp backend is closed ({type(exc).__name__})") from exc
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()
            self._forget_window()
            raise CannotCount(f"llama-server did not answer within {timeout:g} s") from None
        except httpx.TimeoutException as exc:
            self._forget_window()
            raise CannotCount(f"llama-server timed out ({type(exc).__name__})") from None
        except httpx.ConnectError as exc:
            self._forget_window()
            raise CannotCount(f"llama-server unreachable ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            self._forget_window()
            raise CannotCount(f"llama-server request failed ({type(exc).__name__})") from None

    def _forget_window(self) -> None:
        """A server that stopped answering may come back restarted with another -c/--parallel: ask again."""
        self._window_asked = False

    def _post(self, client: httpx.Client, url: str, payload: dict[str, Any]) -> bytes:
        try:
            content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        except (TypeError, ValueError) as exc:
            raise RequestNotCountable(f"request is not JSON-serialisable ({type(exc).__name__})") from exc
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


def _after_fork_in_child() -> None:
    for backend in list(_LIVE):
        backend._forget_connection_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
