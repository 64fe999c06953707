"""Loopback HTTP servers that fail the way real tokenizer servers do, for fault-injection tests.

Raw sockets rather than http.server so the faults are byte-exact: a TCP reset in the middle of
a reply, headers dribbled one byte at a time, a reply that never comes.
"""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
import time
from typing import Literal

from batontest.loopback import LoopbackServer

Fault = Literal[
    "ok",  # a valid /tokenize reply (use with delay for a slow server)
    "status_500",
    "status_400",
    "not_json",
    "json_array",
    "count_string",
    "count_bool",
    "count_negative",
    "max_model_len_missing",
    "hang",  # accept, read the request, never answer
    "reset",  # send half a reply, then a TCP RST
    "dribble",  # send the reply one byte every `delay` seconds
]


def refused_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class _FaultHandler(socketserver.BaseRequestHandler):
    owner: FaultyServer

    def handle(self) -> None:
        self.owner._serve(self.request)


class FaultyServer(LoopbackServer):
    """Answers every request with the chosen fault; counts requests received."""

    handler = _FaultHandler
    server_class = socketserver.ThreadingTCPServer
    thread_name = "faulty-server"

    def __init__(self, fault: Fault, *, delay: float = 0.0, count: int = 7, max_model_len: int = 40960) -> None:
        self.fault = fault
        self.delay = delay
        self.count = count
        self.max_model_len = max_model_len
        self.requests_received = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # first: handlers that hang or dribble return instead of outliving the server
        super().__exit__(*exc)

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = conn.makefile("rb")
        while not self._stopping.is_set():
            if not _read_request(reader):
                return
            with self._lock:
                self.requests_received += 1
            if not self._answer(conn):
                return

    def _answer(self, conn: socket.socket) -> bool:
        """Send this fault's reply; False when the connection is finished."""
        fault = self.fault
        if fault == "hang":
            self._stopping.wait()
            return False
        if self.delay and fault != "dribble":
            if self._stopping.wait(self.delay):
                return False
        if fault == "reset":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 80\r\n\r\n{\"cou")
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return False
        status, body = self._reply_body()
        data = (
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        if fault == "dribble":
            for i in range(len(data)):
                if self._stopping.wait(self.delay):
                    return False
                conn.sendall(data[i : i + 1])
            return True
        conn.sendall(data)
        return True

    def _reply_body(self) -> tuple[int, bytes]:
        good = {"count": self.count, "max_model_len": self.max_model_len, "tokens": list(range(self.count))}
        bodies: dict[str, tuple[int, object]] = {
            "ok": (200, good),
            "dribble": (200, good),
            "status_500": (500, {"error": {"message": "Internal Server Error", "type": "InternalServerError"}}),
            "status_400": (400, {"error": {"message": "bad request", "type": "BadRequestError", "code": 400}}),
            "json_array": (200, [self.count]),
            "count_string": (200, {**good, "count": str(self.count)}),
            "count_bool": (200, {**good, "count": True}),
            "count_negative": (200, {**good, "count": -1}),
            "max_model_len_missing": (200, {"count": self.count, "tokens": []}),
        }
        if self.fault == "not_json":
            return 200, b"<html>502 Bad Gateway</html>"
        status, payload = bodies[self.fault]
        return status, json.dumps(payload).encode()


def _read_request(reader) -> bool:  # type: ignore[no-untyped-def]
    """Consume one HTTP/1.1 request (headers + Content-Length body); False on EOF."""
    length = 0
    line = reader.readline()
    if not line:
        return False
    while True:
        line = reader.readline()
        if not line:
            return False
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length:
        reader.read(length)
    return True


def elapsed(start: float) -> float:
    """Seconds since ``start`` (a ``time.monotonic()`` value)."""
    return time.monotonic() - start
