"""A loopback stand-in for an Ollama server's model routes: GET /api/ps, POST /api/show.

No Ollama server can be installed here (it ships as a Go binary, on no package index this machine reaches), so its
replies are Ollama's own documented bodies, copied from ollama/ollama at fb30760 (v0.33 line): docs/openapi.yaml's
``/api/ps`` and ``/api/show`` examples (gemma4, ``context_length: 4096``, ``parameters: "temperature 0.7\\nnum_ctx
2048"``, ``gemma4.context_length: 131072``); a test changes the figures it needs.
Every other route answers 404 as Ollama does (``404 page not found``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from batontest.loopback import JsonHandler, LoopbackServer

MODEL = "gemma4"
PS = {"models": [{  # docs/openapi.yaml, /api/ps example
    "name": "gemma4", "model": "gemma4", "size": 6591830464,
    "digest": "c6eb396dbd5992bbe3f5cdb947e8bbc0ee413d7c17e2beaae69f5d569cf982eb",
    "details": {"parent_model": "", "format": "gguf", "family": "gemma4", "families": ["gemma4"],
                "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
    "expires_at": "2025-10-17T16:47:07.93355-07:00", "size_vram": 5333539264, "context_length": 4096}]}
SHOW = {  # docs/openapi.yaml, /api/show example (model_info cut to the architecture and its lengths)
    "parameters": "temperature 0.7\nnum_ctx 2048",
    "license": "Gemma Terms of Use \n\nLast modified: February 21, 2024...",
    "capabilities": ["completion", "vision"], "modified_at": "2025-08-14T15:49:43.634137516-07:00",
    "details": {"parent_model": "", "format": "gguf", "family": "gemma4", "families": ["gemma4"],
                "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
    "model_info": {"general.architecture": "gemma4", "gemma4.attention.head_count": 8, "gemma4.block_count": 42,
                   "gemma4.context_length": 131072, "gemma4.embedding_length": 2560}}


class _Handler(JsonHandler):
    owner: OllamaStandin

    def do_GET(self) -> None:  # noqa: N802
        self.owner.asked.append(("GET", self.path, None))
        self._answer(self.owner.ps if self.path == "/api/ps" else None)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.owner.asked.append(("POST", self.path, body))
        self._answer(self.owner.show if self.path == "/api/show" else None)

    def _answer(self, reply: Any) -> None:
        if reply is None:
            self.send_body(404, "text/plain", b"404 page not found")
        else:
            self.send_json(200, reply)


class OllamaStandin(LoopbackServer):
    """``ps`` and ``show`` are the replies (copies of the documented ones; a test edits them); ``asked`` lists
    ``(method, path, body)`` of every request."""

    handler = _Handler

    def __init__(self) -> None:
        self.ps: dict[str, Any] = copy.deepcopy(PS)
        self.show: dict[str, Any] = copy.deepcopy(SHOW)
        self.asked: list[tuple[str, str, Any]] = []

    @property
    def base_url(self) -> str:
        return self.url + "/v1"
