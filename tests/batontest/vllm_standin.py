"""A loopback stand-in for vLLM's /tokenize, /detokenize and GET /v1/models.

Renders with a real Hugging Face tokenizer, ``baton_hf.normalize`` (vLLM's own
request normalisation) and vLLM's template facts (``baton_hf.template``), encoding the whole
prompt in one piece as vLLM does, so its counts are real counts: the vllm-real conformance tests check it
against a real vLLM 0.32 server on the same requests. Used where a 3.7 GB server is too heavy:
happy-path tests of the vllm backend and the benchmark (``requests_received`` counts round trips).

    with VllmStandin() as server:
        backend = VllmBackend(TokenizerConfig(url=server.url, model=server.model_name))
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

DEFAULT_MODEL_NAME = "qwen3-standin"
DEFAULT_MAX_MODEL_LEN = 40960


class _Handler(JsonHandler):
    owner: VllmStandin

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self.owner._record(self.path, dict(self.headers))
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self.send_json(400, _error("request body is not JSON", "BadRequestError", 400))
            return
        if not isinstance(body, dict):
            self.send_json(400, _error("request body must be an object", "BadRequestError", 400))
        elif self.path == "/tokenize":
            if self.owner.failing():
                self.owner.serve_fault(self)
                return
            self.send_json(*self.owner.tokenize(body))
        elif self.path == "/detokenize":
            self.send_json(*self.owner.detokenize(body))
        else:
            self.send_json(404, _error("Not Found", "NotFoundError", 404))

    def do_GET(self) -> None:  # noqa: N802
        self.owner._record(self.path, dict(self.headers))
        if self.path == "/v1/models":
            self.send_json(200, self.owner.models())
        else:
            self.send_json(404, _error("Not Found", "NotFoundError", 404))


class VllmStandin(LoopbackServer):
    """Start/stop as a context manager; binds 127.0.0.1 on a free port."""

    handler = _Handler
    thread_name = "vllm-standin"

    def __init__(
        self,
        tokenizer_dir: str | Path | None = None,
        *,
        model_name: str = DEFAULT_MODEL_NAME,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        mistral_tool_call_400: bool = False,
        fault_after: int | None = None,
        fault: str = "500",
        hang_seconds: float = 30.0,
    ) -> None:
        from transformers import AutoTokenizer

        if tokenizer_dir is None:
            from batontest.assets import qwen3_dir

            tokenizer_dir = qwen3_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self.model_name = model_name
        self.max_model_len = max_model_len
        self.mistral_tool_call_400 = mistral_tool_call_400
        self.requests_received: Counter[str] = Counter()
        self.tokenize_bodies: list[dict[str, Any]] = []
        self.fault_after = fault_after
        self.fault = fault
        self.hang_seconds = hang_seconds
        self.faults_served = 0
        self._released = threading.Event()  # set at exit: a hanging request ends with the server
        self.last_headers: dict[str, str] = {}
        self._render_lock = threading.Lock()  # HF tokenizers are not safe to share across threads
        self._count_lock = threading.Lock()

    @property
    def total_requests(self) -> int:
        with self._count_lock:
            return sum(self.requests_received.values())

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        super().__exit__(*exc)

    # -- fault injection ----------------------------------------------------------------------

    def failing(self) -> bool:
        """True once more than ``fault_after`` /tokenize requests arrived (a server failing mid-session)."""
        with self._count_lock:
            return self.fault_after is not None and self.requests_received["/tokenize"] > self.fault_after

    def serve_fault(self, handler: JsonHandler) -> None:
        """``500`` answers an internal error at once; ``hang`` holds the connection without answering."""
        with self._count_lock:
            self.faults_served += 1
        if self.fault == "hang":
            self._released.wait(self.hang_seconds)
            return
        handler.send_json(500, _error("Internal Server Error", "InternalServerError", 500))

    # -- vLLM behaviour -----------------------------------------------------------------------

    def tokenize(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = body.get("model")
        if model is not None and model != self.model_name:
            return 404, _error(f"The model `{model}` does not exist.", "NotFoundError", 404)
        if "messages" in body:
            with self._count_lock:
                self.tokenize_bodies.append(body)
            return self._tokenize_chat(body)
        if isinstance(body.get("prompt"), str):
            with self._render_lock:
                ids = self.tokenizer.encode(body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True)))
            return 200, self._tokens_reply(ids)
        return 400, _error("either messages or prompt is required", "BadRequestError", 400)

    def _tokenize_chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.mistral_tool_call_400 and any(
            isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls") for m in body["messages"]
        ):  # vllm-project/vllm#57730: mistral tokenizer mode rejects assistant tool_calls
            return 400, _error("1 validation error for AssistantMessage", "BadRequestError", 400)
        if _has_non_string_arguments(body["messages"]):  # vLLM's pydantic schema: arguments must be str
            return 400, _error("function.arguments: Input should be a valid string", "BadRequestError", 400)
        template = body.get("chat_template") or self.tokenizer.chat_template
        try:
            normalized = normalize_request(
                body,
                content_format=detect_content_format(template),
                supports_developer=template_supports_developer(template),
            )
        except RequestShapeError as exc:
            return 400, _error(str(exc), "BadRequestError", 400)
        accepted = accepted_kwargs(template, self.tokenizer.apply_chat_template)
        kwargs = {k: v for k, v in normalized.chat_template_kwargs.items() if k in accepted}
        with self._render_lock:
            try:
                prompt = self.tokenizer.apply_chat_template(
                    normalized.messages, tools=normalized.tools, chat_template=template, tokenize=False, **kwargs
                )
            except Exception as exc:  # the template raised (raise_exception, TypeError, ...): vLLM answers 400
                return 400, _error(f"chat template error ({type(exc).__name__})", "BadRequestError", 400)
            ids = self.tokenizer.encode(prompt, add_special_tokens=bool(body.get("add_special_tokens", False)))
        return 200, self._tokens_reply(ids)

    def detokenize(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            return 400, _error("tokens must be a list of integers", "BadRequestError", 400)
        with self._render_lock:
            return 200, {"prompt": self.tokenizer.decode(tokens)}

    def models(self) -> dict[str, Any]:
        entry = {"id": self.model_name, "object": "model", "owned_by": "vllm", "root": self.model_name,
                 "max_model_len": self.max_model_len}
        return {"object": "list", "data": [entry]}

    def _tokens_reply(self, ids: list[int]) -> dict[str, Any]:
        return {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids, "token_strs": None}

    def _record(self, route: str, headers: dict[str, str]) -> None:
        with self._count_lock:
            self.requests_received[route] += 1
            self.last_headers = headers


def _has_non_string_arguments(messages: Any) -> bool:
    return any(
        not isinstance((call.get("function") or {}).get("arguments"), str)
        for m in messages if isinstance(m, dict) and isinstance(m.get("tool_calls"), list)
        for call in m["tool_calls"] if isinstance(call, dict)
    )


def _error(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
