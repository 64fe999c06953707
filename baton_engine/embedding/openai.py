"""The built-in embedder: any OpenAI-compatible ``POST {url}/v1/embeddings`` (vLLM, llama.cpp ``--embedding``,
Ollama's ``/v1``, OpenAI itself). One request per batch; vectors put back in input order by their ``index``.

A text longer than the model's window is refused, not truncated (vLLM answers HTTP 400 for the whole batch). When
the server says the window (vLLM's ``/v1/models`` reports ``max_model_len`` per model; llama.cpp, Ollama and
OpenAI do not), each request asks the server to cut every text to it with the model's own tokenizer
(``truncate_prompt_tokens``): a long text's vector is then its head's. Otherwise a refusal is ``EmbedderRefused``
(HTTP 400 or 413), and ``refusals.RefusalSplitter`` finds which texts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx

from baton_engine.embedding.contract import EmbedderConfig, EmbedderError, EmbedderRefused, Vector, checked_vectors

MAX_BATCH = 64
REFUSED_STATUSES = frozenset({400, 413})  # the input's fault (too long, too large), not the server's health


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
        base = config.url.rstrip("/").removesuffix("/v1/embeddings").removesuffix("/v1")
        self._url, self._models_url = f"{base}/v1/embeddings", f"{base}/v1/models"
        self._model = config.model
        self._query_prefix, self._passage_prefix = config.query_prefix, config.passage_prefix
        self.weak_below = config.weak_below
        self._client = httpx.Client(timeout=config.timeout_seconds, headers=headers, transport=transport)
        self._window: int | None = None
        self._window_asked = False

    @property
    def name(self) -> str:
        """The model, and the passages' prefix when there is one (their vectors are another model's)."""
        return f"openai:{self._model}" + (f" {self._passage_prefix.strip()}" if self._passage_prefix else "")

    @property
    def window(self) -> int | None:
        """The model's window in tokens as the server reports it (asked once, on the first reachable ask); None
        when it does not say."""
        if not self._window_asked:
            try:
                response = self._client.get(self._models_url)
            except httpx.HTTPError:
                return None  # unreachable: asked again next time (the embedding request says what is wrong)
            self._window, self._window_asked = _max_model_len(response, self._model), True
        return self._window

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        return self._embed([self._passage_prefix + text for text in texts])

    def embed_query(self, texts: Sequence[str]) -> list[Vector | None]:
        return self._embed([self._query_prefix + text for text in texts])

    def _embed(self, texts: Sequence[str]) -> list[Vector | None]:
        vectors: list[Vector | None] = []
        for start in range(0, len(texts), MAX_BATCH):
            vectors.extend(self._batch(list(texts[start:start + MAX_BATCH])))
        return vectors

    def _batch(self, texts: list[str]) -> list[Vector | None]:
        if not texts:
            return []
        request: dict[str, Any] = {"model": self._model, "input": texts}
        window = self.window
        if window:
            request["truncate_prompt_tokens"] = window
        try:
            response = self._client.post(self._url, json=request)
        except httpx.HTTPError as exc:
            raise EmbedderError(f"embedding server unreachable: {type(exc).__name__}") from None
        if response.status_code in REFUSED_STATUSES:
            raise EmbedderRefused(f"embedding server refused the input: HTTP {response.status_code}")
        if response.status_code != 200:
            raise EmbedderError(f"embedding server answered HTTP {response.status_code}")
        try:
            data: Any = response.json()["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            return checked_vectors([item["embedding"] for item in ordered], len(texts))
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embedding server answered no OpenAI embeddings list ({type(exc).__name__})") \
                from None


def _max_model_len(response: httpx.Response, model: str) -> int | None:
    """``max_model_len`` of ``model`` in a ``/v1/models`` answer (vLLM's), else None."""
    try:
        models: Any = response.json()["data"] if response.status_code == 200 else []
        found = [entry.get("max_model_len") for entry in models if isinstance(entry, dict) and entry.get("id") == model]
    except (ValueError, KeyError, TypeError):
        return None
    window = found[0] if found else None
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def create(config: EmbedderConfig) -> OpenAIEmbedder:
    return OpenAIEmbedder(config)
