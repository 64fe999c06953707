"""A loopback stand-in for llama.cpp's llama-server: POST /apply-template, POST /tokenize, GET /props, /v1/models.

Its replies have llama-server's shapes (tools/server/server-context.cpp: ``{"prompt"}``, ``{"tokens"}``,
``default_generation_settings.n_ctx``, ``owned_by: "llamacpp"``) and its prompt is rendered by a real Hugging Face
tokenizer's chat template, so counts are real Qwen3 counts. The llama-real tests check the backend against a REAL
llama-server; this one serves the default environment, where no server is built (the conformance kit, URL and
reply rules, what is sent).

    with LlamaStandin(n_ctx=4096) as server:
        backend = LlamaCppBackend(TokenizerConfig(url=server.url))
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from baton_hf.normalize import RequestShapeError, normalize_request, template_supports_developer
from baton_hf.template import accepted_kwargs, detect_content_format
from batontest.loopback import JsonHandler, LoopbackServer

DEFAULT_MODEL_NAME = "qwen3-standin.gguf"


class _Handler(JsonHandler):
    owner: LlamaStandin

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("Content-Length") or 0)
        self.owner.record(self.path, dict(self.headers))
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self.send_json(500, _error("[json.exception.parse_error.101] parse error", "server_error", 500))
            return
        if self.path == "/apply-template":
            self.send_json(*self.owner.apply_template(body))
        elif self.path == "/tokenize":
            self.send_json(*self.owner.tokenize(body))
        else:
            self.send_json(404, _error("File Not Found", "not_found_error", 404))

    def do_GET(self) -> None:  # noqa: N802
        self.owner.record(self.path, dict(self.headers))
        if self.path == "/props" and self.owner.props_status != 200:
            self.send_json(self.owner.props_status, _error("File Not Found", "not_found_error", 404))
        elif self.path == "/props":
            self.send_json(200, {"default_generation_settings": {"n_ctx": self.owner.n_ctx, "params": {}},
                                 "total_slots": self.owner.slots, "model_alias": self.owner.model_name})
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": self.owner.model_name, "aliases": [], "object": "model", "owned_by": "llamacpp",
                 "meta": {"n_ctx": self.owner.n_ctx}}]})
        else:
            self.send_json(404, _error("File Not Found", "not_found_error", 404))


class LlamaStandin(LoopbackServer):
    """Start/stop as a context manager; binds 127.0.0.1 on a free port. ``n_ctx`` is the per-slot window."""

    handler = _Handler
    thread_name = "llama-standin"

    def __init__(self, tokenizer_dir: str | Path | None = None, *, n_ctx: int = 4096, slots: int = 2,
                 model_name: str = DEFAULT_MODEL_NAME) -> None:
        from transformers import AutoTokenizer

        if tokenizer_dir is None:
            from batontest.assets import qwen3_dir

            tokenizer_dir = qwen3_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self.n_ctx = n_ctx
        self.slots = slots
        self.model_name = model_name
        self.props_status = 200  # tests set another status: a server (or proxy) without a usable /props
        self.tokenize_status = 200  # ... or one whose /tokenize fails
        self.requests_received: Counter[str] = Counter()
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.last_headers: dict[str, str] = {}
        self._lock = threading.Lock()  # HF tokenizers are not safe to share across threads

    def record(self, route: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests_received[route] += 1
            self.last_headers = headers

    def apply_template(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.bodies.append(("/apply-template", body))
        if not isinstance(body.get("messages"), list):
            return 400, _error("'messages' is required", "invalid_request_error", 400)
        template = self.tokenizer.chat_template
        try:
            normalized = normalize_request(body, content_format=detect_content_format(template),
                                           supports_developer=template_supports_developer(template))
        except RequestShapeError:
            return 400, _error("Expected 'content' to be a string or an array", "invalid_request_error", 400)
        accepted = accepted_kwargs(template, self.tokenizer.apply_chat_template)
        kwargs = {k: v for k, v in normalized.chat_template_kwargs.items() if k in accepted}
        with self._lock:
            try:
                prompt = self.tokenizer.apply_chat_template(normalized.messages, tools=normalized.tools,
                                                            tokenize=False, **kwargs)
            except Exception:  # the template raised: llama-server answers 500 (ex_wrapper's std::exception)
                return 500, _error("template error", "server_error", 500)
        return 200, {"prompt": prompt}

    def tokenize(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.bodies.append(("/tokenize", body))
        if self.tokenize_status != 200:
            return self.tokenize_status, _error("Internal Server Error", "server_error", self.tokenize_status)
        with self._lock:
            # Qwen3's vocabulary adds no BOS, so add_special changes nothing here (as on the real server)
            ids = self.tokenizer.encode(body.get("content", ""), add_special_tokens=False)
        return 200, {"tokens": ids}


def _error(message: str, kind: str, code: int) -> dict[str, Any]:
    """llama.cpp's error body (``format_error_response``)."""
    return {"error": {"code": code, "message": message, "type": kind}}
