"""The lifecycle every loopback test server shares: bind 127.0.0.1 on a free port, serve from a daemon thread.

Why: the model server, the vLLM stand-in and the fault injector differ only in what they answer; starting,
stopping and addressing them is one piece of code, so a fix (shutdown order, thread join) lands everywhere.
"""

from __future__ import annotations

import json
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


class LoopbackServer:
    """A context manager serving ``handler`` (given ``owner = self``) on 127.0.0.1 until exit."""

    handler: ClassVar[type[socketserver.BaseRequestHandler]]
    server_class: ClassVar[type[socketserver.ThreadingTCPServer]] = ThreadingHTTPServer
    thread_name: ClassVar[str] = "loopback-server"
    _server: socketserver.ThreadingTCPServer | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        bound = type(self.handler.__name__, (self.handler,), {"owner": self})
        self._server = self.server_class(("127.0.0.1", 0), bound)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        assert self._server is not None, f"use {type(self).__name__} as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive like uvicorn, no Nagle delay, no per-request stderr lines."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each keep-alive round trip costs ~44 ms

    def send_body(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, payload: Any) -> None:
        self.send_body(status, "application/json", json.dumps(payload).encode())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence per-request stderr lines
        pass
