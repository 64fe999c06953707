"""The loopback model server with a REAL vLLM server as its judge: vLLM renders, counts and refuses.

Why: ``ModelServer`` counts ``usage.prompt_tokens`` with Baton's own hf backend and the /tokenize stand-in
renders with ``baton_hf.normalize``, so a bug in baton_hf would pass both. Here every chat request Hermes
sends (streaming main requests and auxiliary ones) is also sent, body as received, to the real server's
``/v1/chat/completions`` — non-streaming, ``temperature`` 0 and a logit bias that makes the first token
Qwen3's end of turn, so the call returns at once — keeping the client's own ``max_tokens`` /
``max_completion_tokens``. vLLM's ``usage.prompt_tokens`` is the prompt size Hermes is told; when vLLM refuses
(a prompt above the window, a cap above ``max_model_len``, a template error) its status and JSON error body
are the answer, verbatim. The replies themselves (tool calls) still come from the scripted policy.

``strict=True`` adds the rule vLLM 0.32 no longer applies but vLLM 0.20, OpenAI and SGLang do: prompt +
requested output above the window is refused, with vLLM's own prompt count and vLLM 0.20's wording.

    with VllmOracle(policy, vllm_url=url, strict=True) as server:
        ...  # point Hermes at server.base_url; server.vllm_refusals, server.strict_refusals
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from batontest.model_server import ModelServer, Policy, RecordedRequest, protocol_problem
from batontest.real_vllm import QWEN3_END_OF_TURN

EOS_FIRST = {str(QWEN3_END_OF_TURN): 100}
STREAM_ONLY_FIELDS = ("stream", "stream_options")  # vLLM refuses stream_options on a non-streaming request
REQUEST_TIMEOUT_SECONDS = 600.0  # a cold 70k-token prefill of the tiny model on 2 CPU cores
BUDGET_LINE = re.compile(r"baton output budget action=(\S+) prompt=(\S+) source=(\S+) aux=(True|False)")


def baton_budget_lines(home: Path) -> list[tuple[str, int | None, str, bool]]:
    """Baton's ``baton output budget`` log lines (INFO, in Hermes' agent.log): action, prompt, source, aux."""
    log = (home / "logs" / "agent.log").read_text(encoding="utf-8", errors="replace")
    return [(action, None if prompt == "None" else int(prompt), source, aux == "True")
            for action, prompt, source, aux in BUDGET_LINE.findall(log)]


def strict_window_refusal(window: int, prompt_tokens: int, output_tokens: int) -> str | None:
    """vLLM 0.20's refusal of prompt + requested output above the window (None when it fits)."""
    total = prompt_tokens + output_tokens
    if total <= window:
        return None
    return (f"This model's maximum context length is {window} tokens. However, you requested {output_tokens} "
            f"output tokens and your prompt contains at least {prompt_tokens} input tokens, for a total of at least "
            f"{total} tokens. Please reduce the length of the input prompt or the number of requested output tokens.")


class VllmOracle(ModelServer):
    """A ``ModelServer`` whose counts and refusals are the real vLLM server's at ``vllm_url`` (no ``/v1``).

    The window is the server's ``max_model_len`` and ``GET /v1/models`` answers with the server's own list,
    so Hermes' model name must be the name vLLM serves (the forwarded body keeps it). Refusals are kept
    apart by judge: ``vllm_refusals`` (vLLM's own answer), ``strict_refusals`` (the strict rule),
    ``protocol_refusals`` (tool messages without their call, or calls without results: OpenAI refuses them,
    vLLM's template would render them).
    """

    def __init__(self, policy: Policy, *, vllm_url: str, strict: bool = False, **options: Any) -> None:
        self.vllm_url = vllm_url.rstrip("/")
        self.strict = strict
        self._client = httpx.Client(timeout=REQUEST_TIMEOUT_SECONDS)
        listing = self._client.get(f"{self.vllm_url}/v1/models")
        listing.raise_for_status()
        self._models = listing.json()
        served = self._models["data"][0]
        super().__init__(policy, context_window=int(served["max_model_len"]), model_name=str(served["id"]),
                         **options)
        self.judged_by: dict[int, str] = {}  # id(record) -> "vllm" | "strict" | "protocol", refusals only

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._client.close()

    # -- views for assertions -----------------------------------------------------------------

    def _refused_by(self, judge: str) -> list[RecordedRequest]:
        return [r for r in self.requests if self.judged_by.get(id(r)) == judge]

    @property
    def vllm_refusals(self) -> list[RecordedRequest]:
        return self._refused_by("vllm")

    @property
    def strict_refusals(self) -> list[RecordedRequest]:
        return self._refused_by("strict")

    @property
    def protocol_refusals(self) -> list[RecordedRequest]:
        return self._refused_by("protocol")

    # -- the judge ----------------------------------------------------------------------------

    def admit(self, body: dict[str, Any], record: RecordedRequest) -> tuple[int, dict[str, Any]] | None:
        problem = protocol_problem(record.messages)
        if problem is not None:
            return self._refuse(record, "protocol", 400, _error(problem))
        forwarded = {k: v for k, v in body.items() if k not in STREAM_ONLY_FIELDS}
        forwarded.update(stream=False, temperature=0, logit_bias=EOS_FIRST)
        answer = self._client.post(f"{self.vllm_url}/v1/chat/completions", json=forwarded)
        try:
            payload = answer.json()
        except ValueError:
            payload = {"error": {"message": answer.text, "type": "NonJsonAnswer", "param": None,
                                 "code": answer.status_code}}
        if answer.status_code != 200:
            return self._refuse(record, "vllm", answer.status_code, payload)
        record.prompt_tokens = int(payload["usage"]["prompt_tokens"])
        if self.strict:
            problem = strict_window_refusal(self.context_window, record.prompt_tokens, record.output_budget)
            if problem is not None:
                return self._refuse(record, "strict", 400, _error(problem))
        return None

    def count_completion(self, text: str) -> int:
        """The scripted reply's length in vLLM's own tokens (completion-form /tokenize)."""
        answer = self._client.post(f"{self.vllm_url}/tokenize", json={
            "model": self.model_name, "prompt": text, "add_special_tokens": False})
        answer.raise_for_status()
        return int(answer.json()["count"])

    def models(self) -> dict[str, Any]:
        return self._models

    def _refuse(self, record: RecordedRequest, judge: str, status: int,
                payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.judged_by[id(record)] = judge
        return status, payload


def _error(message: str) -> dict[str, Any]:
    """vLLM's error body shape."""
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
