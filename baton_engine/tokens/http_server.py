"""What every tokenizer backend that counts on a server over HTTP shares: its URL, its client and its deadline.

The vLLM and llama.cpp backends are separate distributions that may import only ``baton_engine.tokens``; this is
the piece of the backend contract they both stand on. A client and its worker threads are created lazily and
dropped on fork, so a backend copied into Hermes' state or a forked worker still works; every failure is a
``CannotCount`` whose reason names the server and what went wrong, never prompt text, URLs or secrets.
"""

from __future__ import annotations

import json
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
from urllib.parse import urlsplit

import httpx

from .contract import BackendConfigError, CannotCount, RequestNotCountable, TokenizerConfig

# Concurrent in-flight calls (and pooled keep-alive connections) per backend.
WORKERS = 8
_T = TypeVar("_T")
_LIVE: weakref.WeakSet[ServerConnection] = weakref.WeakSet()


@dataclass(frozen=True)
class ServerURL:
    """A server's root URL (routes are appended to it) and ``netloc``, which is safe to show anywhere."""

    root: str
    netloc: str


def parse_server_url(url: str | None, *, backend: str, suffixes: tuple[str, ...], example: str) -> ServerURL:
    """Accept a server root or the root with one of ``suffixes`` (its OpenAI base, a route) pasted after it.

    Credentials in the URL are refused rather than silently used: they would reach proxies' logs and the
    backend's ``source``; the key belongs in ``api_key``.
    """
    text = (url or "").strip()
    if not text:
        raise BackendConfigError(
            f"the {backend} tokenizer backend needs the server URL: set the tokenizer `url` setting, e.g. {example}"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BackendConfigError(f"the {backend} tokenizer `url` is not a valid URL ({type(exc).__name__})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BackendConfigError(f"the {backend} tokenizer `url` must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise BackendConfigError(f"the {backend} tokenizer `url` must not embed credentials; put the key in `api_key`")
    if parts.query or parts.fragment:
        raise BackendConfigError(f"the {backend} tokenizer `url` must not have a query string or fragment")
    path = parts.path.rstrip("/")
    for suffix in suffixes:
        if path.endswith(suffix):
            path = path[: -len(suffix)].rstrip("/")
            break
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    return ServerURL(root=f"{parts.scheme}://{netloc}{path}", netloc=netloc)


def json_content(payload: dict[str, Any]) -> bytes:
    """A request body; a request that is not JSON cannot be counted by any server (the server is not at fault)."""
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise RequestNotCountable(f"request is not JSON-serialisable ({type(exc).__name__})") from exc


def json_object(body: bytes, *, server: str, route: str) -> dict[str, Any]:
    """A reply's JSON object; a wrong type is a broken server, never a count."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # UnicodeDecodeError included
        raise CannotCount(f"{server} {route} reply is not JSON ({type(exc).__name__})") from exc
    if not isinstance(data, dict):
        raise CannotCount(f"{server} {route} reply is not a JSON object")
    return data


class ServerConnection:
    """One backend's HTTP client and workers; ``bounded`` runs a job of calls within ``timeout_seconds``."""

    def __init__(self, config: TokenizerConfig, *, backend: str, server: str, distribution: str) -> None:
        timeout = config.timeout_seconds
        valid = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        if not valid or not math.isfinite(timeout) or timeout <= 0:
            raise BackendConfigError(f"the {backend} tokenizer `timeout_seconds` must be a finite number > 0")
        self._config = config
        self._backend = backend
        self._server = server
        self._distribution = distribution
        self._lock = threading.Lock()
        self._state: tuple[httpx.Client, ThreadPoolExecutor] | None = None
        _LIVE.add(self)

    def bounded(self, job: Callable[[httpx.Client], _T], *, unanswered: Callable[[], None] | None = None) -> _T:
        """``job``'s calls, answered within ``timeout_seconds`` together or abandoned.

        httpx bounds each phase of one request but not their sum (a server that dribbles bytes holds a read open),
        and a count may be two requests: the job runs on a worker and the caller waits at most the timeout.
        ``unanswered`` runs when the server did not answer (as opposed to answering badly): it may come back
        restarted with other settings, so a backend can forget what it learned of it.
        """
        client, workers = self._connect()
        timeout = self._config.timeout_seconds
        try:
            future = workers.submit(job, client)
        except RuntimeError as exc:  # closed concurrently
            raise CannotCount(f"{self._backend} backend is closed ({type(exc).__name__})") from exc
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()
            reason = f"{self._server} did not answer within {timeout:g} s"
        except httpx.TimeoutException as exc:
            reason = f"{self._server} timed out ({type(exc).__name__})"
        except httpx.ConnectError as exc:
            reason = f"{self._server} unreachable ({type(exc).__name__})"
        except httpx.HTTPError as exc:
            reason = f"{self._server} request failed ({type(exc).__name__})"
        if unanswered is not None:
            unanswered()
        raise CannotCount(reason)

    def close(self) -> None:
        with self._lock:
            state, self._state = self._state, None
        if state is not None:
            client, workers = state
            workers.shutdown(wait=False, cancel_futures=True)
            client.close()

    def _connect(self) -> tuple[httpx.Client, ThreadPoolExecutor]:
        with self._lock:
            if self._state is None:
                headers = {"Accept": "application/json", "User-Agent": self._config.user_agent or self._user_agent()}
                if self._config.api_key:
                    headers["Authorization"] = f"Bearer {self._config.api_key}"
                client = httpx.Client(
                    headers=headers,
                    timeout=httpx.Timeout(self._config.timeout_seconds),
                    limits=httpx.Limits(max_connections=WORKERS, max_keepalive_connections=WORKERS),
                    follow_redirects=False,
                )
                workers = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=f"baton-{self._backend}")
                self._state = (client, workers)
            return self._state

    def _user_agent(self) -> str:
        try:
            return f"{self._distribution}/{version(self._distribution)}"
        except PackageNotFoundError:
            return self._distribution

    def _forget_after_fork(self) -> None:
        """In a forked child the parent's sockets, threads and lock state are not ours."""
        self._lock = threading.Lock()
        self._state = None


def _after_fork_in_child() -> None:
    for connection in list(_LIVE):
        connection._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
