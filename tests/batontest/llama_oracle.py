"""The loopback model server with a REAL llama-server as its judge: llama.cpp renders, counts and refuses.

As ``batontest.vllm_oracle.VllmOracle`` for vLLM: every chat request Hermes sends is also sent, body as received,
to the real server's ``/v1/chat/completions`` — non-streaming, ``temperature`` 0, one output token (the weights
are random; only the prompt matters) — and the server's ``usage.prompt_tokens`` is the prompt size Hermes is
told; when it refuses (``exceed_context_size_error``, a template error) its status and JSON error body are the
answer, verbatim. The replies themselves (tool calls) come from the scripted policy.

    with LlamaOracle(policy, llama_url=url) as server:
        ...  # point Hermes at server.base_url; server.llama_refusals
"""

from __future__ import annotations

from typing import Any

import httpx

from batontest.model_server import ModelServer, Policy, RecordedRequest, protocol_problem

DROPPED_FIELDS = ("stream", "stream_options", "max_tokens", "max_completion_tokens")
REQUEST_TIMEOUT_SECONDS = 600.0


class LlamaOracle(ModelServer):
    """A ``ModelServer`` whose counts and refusals are the real llama-server's at ``llama_url`` (no ``/v1``); its
    window is the server's per-slot ``n_ctx`` and Hermes' model name is the server's ``--alias``."""

    def __init__(self, policy: Policy, *, llama_url: str, **options: Any) -> None:
        self.llama_url = llama_url.rstrip("/")
        self._client = httpx.Client(timeout=REQUEST_TIMEOUT_SECONDS)
        listing = self._client.get(f"{self.llama_url}/v1/models")
        listing.raise_for_status()
        self._models = listing.json()
        props = self._client.get(f"{self.llama_url}/props").json()
        super().__init__(policy, context_window=int(props["default_generation_settings"]["n_ctx"]),
                         model_name=str(self._models["data"][0]["id"]), **options)
        self.judged_by: dict[int, str] = {}  # id(record) -> "llama" | "protocol", refusals only

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._client.close()

    @property
    def llama_refusals(self) -> list[RecordedRequest]:
        return [r for r in self.requests if self.judged_by.get(id(r)) == "llama"]

    def admit(self, body: dict[str, Any], record: RecordedRequest) -> tuple[int, dict[str, Any]] | None:
        problem = protocol_problem(record.messages)
        if problem is not None:
            self.judged_by[id(record)] = "protocol"
            return 400, {"error": {"code": 400, "message": problem, "type": "invalid_request_error"}}
        forwarded = {k: v for k, v in body.items() if k not in DROPPED_FIELDS}
        forwarded.update(stream=False, temperature=0, max_tokens=1)
        answer = self._client.post(f"{self.llama_url}/v1/chat/completions", json=forwarded)
        try:
            payload = answer.json()
        except ValueError:
            payload = {"error": {"code": answer.status_code, "message": answer.text, "type": "non_json_answer"}}
        if answer.status_code != 200:
            self.judged_by[id(record)] = "llama"
            return answer.status_code, payload
        record.prompt_tokens = int(payload["usage"]["prompt_tokens"])
        return None

    def count_completion(self, text: str) -> int:
        """The scripted reply's length in the server's own tokens."""
        answer = self._client.post(f"{self.llama_url}/tokenize", json={"content": text, "add_special": False})
        answer.raise_for_status()
        return len(answer.json()["tokens"])

    def models(self) -> dict[str, Any]:
        return self._models
