"""Exact counts from a vLLM server's /tokenize, with a hard per-call deadline.

The HTTP client, its worker threads and the deadline are ``baton_engine.tokens.http_server``'s (shared
with the llama.cpp backend); they are dropped on fork, deepcopy and pickle, so a backend can be copied
into Hermes' state or a forked worker and still work.
Every failure is a ``CannotCount`` whose reason names what went wrong without prompt text,
URLs or secrets; the counter turns it into the rough+margin fallback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx

from baton_engine.tokens.contract import (
    CannotCount,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)
from baton_engine.tokens.http_server import ServerConnection, json_content

from .endpoint import parse_endpoint
from .payload import chat_payload, has_tool_call_history, text_payload
from .reply import parse_models_max_model_len, parse_tokenize_reply

log = logging.getLogger("baton_vllm")

class ToolCallHistoryUnsupported(RequestNotCountable):
    """The server answered 400 to a history with assistant tool_calls (vLLM 0.32 mistral mode,
    vllm-project/vllm#57730): the request is valid, the server cannot render it. A distinct type so
    the counter's fallback reason (which names only exception types) says what happened; a
    ``RequestNotCountable`` so the circuit breaker keeps counting other requests with this server."""


@dataclass(frozen=True)
class MaxModelLenMismatch:
    """The server's window differs from the configured one.

    Counts stay exact (the tokenizer is the same); only the window is in doubt, so budgets
    should use ``effective`` (the smaller), which is what the server will enforce or the user meant.
    """

    configured: int
    server: int

    @property
    def effective(self) -> int:
        return min(self.configured, self.server)


class VllmBackend(TokenizerBackend):
    """Counts through vLLM's /tokenize (chat form for requests, completion form for text)."""

    remote = True

    def __init__(self, config: TokenizerConfig) -> None:
        self._config = config
        self._http = ServerConnection(config, backend="vllm", server="vLLM server", distribution="baton-engine-vllm")
        self._endpoint = parse_endpoint(config.url)
        self._max_model_len: int | None = None
        self._mismatch: MaxModelLenMismatch | None = None

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> VllmBackend:
        return cls(config)

    # -- contract -------------------------------------------------------------------------

    @property
    def source(self) -> str:
        return self._endpoint.source

    def count_chat(self, request: ChatRequest) -> TokenCount:
        payload = chat_payload(request, self._config.model)
        status, body = self._call("POST", self._endpoint.tokenize_url, payload)
        if status == 400 and has_tool_call_history(payload):
            # vLLM 0.32 --tokenizer-mode mistral rejects every assistant tool_calls message
            # (vllm-project/vllm#57730): the request is fine, the server cannot render it.
            raise ToolCallHistoryUnsupported("server cannot count tool-call histories (vLLM HTTP 400, vllm#57730)")
        return self._count_from(status, body)

    def count_text(self, text: str) -> TokenCount:
        status, body = self._call("POST", self._endpoint.tokenize_url, text_payload(text, self._config.model))
        return self._count_from(status, body)

    @property
    def max_model_len(self) -> int | None:
        """From the last /tokenize reply, else asked once from GET /v1/models (None when unknown)."""
        if self._max_model_len is None:
            try:
                status, body = self._call("GET", self._endpoint.models_url, None)
                if status == 200:
                    found = parse_models_max_model_len(body, self._config.model)
                    if found is not None:
                        self._observe_max_model_len(found)
            except CannotCount as exc:
                log.debug("vllm max_model_len unknown: %s", exc)
        return self._max_model_len

    @property
    def max_model_len_mismatch(self) -> MaxModelLenMismatch | None:
        """Set once the server reported a window other than ``TokenizerConfig.context_length``."""
        return self._mismatch

    def clear_cache(self) -> None:
        """Nothing to forget: counts are cached by the counter, not here."""

    def close(self) -> None:
        self._http.close()

    # -- copying: never copy sockets, threads or locks ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self._config, "max_model_len": self._max_model_len}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]
        if state["max_model_len"] is not None:
            self._observe_max_model_len(state["max_model_len"])

    def __repr__(self) -> str:
        return (
            f"VllmBackend(source={self.source!r}, model={self._config.model!r}, "
            f"timeout_seconds={self._config.timeout_seconds!r})"
        )

    # -- HTTP -------------------------------------------------------------------------------

    def _call(self, method: str, url: str, payload: dict[str, Any] | None) -> tuple[int, bytes]:
        """One request, answered within ``timeout_seconds`` or abandoned."""
        content = None if payload is None else json_content(payload)
        return self._http.bounded(lambda client: _send(client, method, url, content))

    def _count_from(self, status: int, body: bytes) -> TokenCount:
        if status != 200:
            raise CannotCount(_status_reason(status))
        reply = parse_tokenize_reply(body)
        self._observe_max_model_len(reply.max_model_len)
        return TokenCount(tokens=reply.count, exact=True, source=self.source, max_model_len=reply.max_model_len)

    def _observe_max_model_len(self, server: int) -> None:
        self._max_model_len = server
        configured = self._config.context_length
        if configured is None or configured == server:
            return
        mismatch = MaxModelLenMismatch(configured=configured, server=server)
        if mismatch != self._mismatch:
            self._mismatch = mismatch
            log.warning(
                "vLLM max_model_len %d differs from the configured context_length %d; counts stay exact, "
                "budgets should use the smaller window %d",
                server,
                configured,
                mismatch.effective,
            )


def _send(client: httpx.Client, method: str, url: str, content: bytes | None) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"} if content is not None else None
    response = client.request(method, url, content=content, headers=headers)
    return response.status_code, response.content


def _status_reason(status: int) -> str:
    if status in (401, 403):
        return f"vLLM refused the request (HTTP {status}); check the tokenizer `api_key`"
    if status == 404:
        return "vLLM has no /tokenize route or does not serve the configured model (HTTP 404)"
    if status == 400:
        return "vLLM rejected the request (HTTP 400)"
    return f"vLLM answered HTTP {status}"
