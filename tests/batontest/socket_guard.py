"""A socket guard for tests: every outbound connection is recorded; only allowed addresses go through.

Why patch ``socket.socket.connect``/``connect_ex`` and ``socket.create_connection`` (and name lookups):
httpx, urllib, huggingface_hub and git-over-http all end in one of them, so a guard there catches a
connection whatever library makes it. Refused attempts raise ``ConnectionRefusedError`` (what a
firewall would do), so code under test takes its ordinary "unreachable" path instead of crashing,
and the test then asserts ``guard.refused == []``.

    with SocketGuard(allowed=[("127.0.0.1", port)]) as guard:
        run_the_code()
    assert guard.refused == []
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Attempt:
    """One connection or name lookup the code under test tried (``kind``: connect or resolve)."""

    kind: str
    host: str
    port: int | None
    allowed: bool


def address_of(url: str) -> tuple[str, int]:
    """``(host, port)`` of an http(s) URL, the default port filled in."""
    parts = urlsplit(url)
    assert parts.hostname, f"not a URL: {url!r}"
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


@dataclass
class SocketGuard:
    """Context manager; thread-safe; restores the originals on exit (also after an exception)."""

    allowed: Iterable[tuple[str, int]] = ()
    attempts: list[Attempt] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _saved: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._allowed = {(host, int(port)) for host, port in self.allowed}

    @property
    def refused(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if not a.allowed]

    @property
    def connections(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if a.kind == "connect"]

    def _record(self, kind: str, host: str, port: int | None) -> bool:
        allowed = (host, port) in self._allowed if kind == "connect" else (
            host in LOOPBACK_NAMES or any(host == h for h, _ in self._allowed))
        with self._lock:
            self.attempts.append(Attempt(kind, host, port, allowed))
        return allowed

    def _check_address(self, family: int, address: Any) -> None:
        if family == getattr(socket, "AF_UNIX", None):
            return  # a local IPC socket, not the network
        host, port = str(address[0]), int(address[1])
        if not self._record("connect", host, port):
            raise ConnectionRefusedError(111, f"socket guard: connection to {host}:{port} is not allowed")

    def __enter__(self) -> SocketGuard:
        guard = self
        original_connect = socket.socket.connect
        original_connect_ex = socket.socket.connect_ex
        original_create = socket.create_connection
        original_getaddrinfo = socket.getaddrinfo
        self._saved = {"connect": original_connect, "connect_ex": original_connect_ex,
                       "create_connection": original_create, "getaddrinfo": original_getaddrinfo}

        def connect(sock: socket.socket, address: Any) -> None:
            guard._check_address(sock.family, address)
            return original_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard._check_address(sock.family, address)
            return original_connect_ex(sock, address)

        def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            host, port = str(address[0]), int(address[1])
            if not guard._record("connect", host, port):
                raise ConnectionRefusedError(111, f"socket guard: connection to {host}:{port} is not allowed")
            return original_create(address, *args, **kwargs)

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else str(host)
            if not guard._record("resolve", name, int(port) if isinstance(port, int) else None):
                raise socket.gaierror(socket.EAI_NONAME, f"socket guard: name lookup of {name} is not allowed")
            return original_getaddrinfo(host, port, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.create_connection = create_connection  # type: ignore[assignment]
        socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self._saved["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = self._saved["connect_ex"]  # type: ignore[method-assign]
        socket.create_connection = self._saved["create_connection"]  # type: ignore[assignment]
        socket.getaddrinfo = self._saved["getaddrinfo"]  # type: ignore[assignment]
