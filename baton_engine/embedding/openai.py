"""The built-in embedder: any OpenAI-compatible ``POST {url}/v1/embeddings`` (vLLM, llama.cpp ``--embedding``,
Ollama's ``/v1``, OpenAI itself). One request per batch; vectors put back in input order by their ``index``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx

from baton_engine.embedding.contract import EmbedderConfig, EmbedderError, Vector, checked_vectors

MAX_BATCH = 64


class OpenAIEmbedder:
    def __init__(self, config: EmbedderConfig, transport: httpx.BaseTransport | None = None) -> None:
        if not config.url or not config.model:
            raise EmbedderError("embedder backend 'openai' needs url (the server, e.g. http://127.0.0.1:8000) "
                                "and model (the name the server serves)")
        headers = {}
        if config.api_key_env:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise EmbedderError(f"environment variable {config.api_key_env} (embedder api_key_env) is not set")
            headers["Authorization"] = f"Bearer {key}"
        base = config.url.rstrip("/")
        self._url = base if base.endswith("/v1/embeddings") else base.removesuffix("/v1") + "/v1/embeddings"
        self._model = config.model
        self._client = httpx.Client(timeout=config.timeout_seconds, headers=headers, transport=transport)

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = []
        for start in range(0, len(texts), MAX_BATCH):
            vectors.extend(self._batch(list(texts[start:start + MAX_BATCH])))
        return vectors

    def _batch(self, texts: list[str]) -> list[Vector]:
        if not texts:
            return []
        try:
            response = self._client.post(self._url, json={"model": self._model, "input": texts})
        except httpx.HTTPError as exc:
            raise EmbedderError(f"embedding server unreachable: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise EmbedderError(f"embedding server answered HTTP {response.status_code}")
        try:
            data: Any = response.json()["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            return checked_vectors([item["embedding"] for item in ordered], len(texts))
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embedding server answered no OpenAI embeddings list ({type(exc).__name__})") \
                from None


def create(config: EmbedderConfig) -> OpenAIEmbedder:
    return OpenAIEmbedder(config)
