"""The embedder contract: ``embed(texts) -> one vector per text``, all of one dimension.

Why so small: an operator usually already runs an embedding server (vLLM, llama.cpp ``--embedding``, Ollama) or
has a model directory; a backend only turns texts into vectors. Batching, caching, when to embed and how to rank
are recall's. A backend raises ``EmbedderError`` (a message without the texts) when it cannot answer, and
``EmbedderRefused`` when the server refuses the input itself (e.g. a text longer than the model's window): then
``refusals.RefusalSplitter`` finds which texts, so the others keep their vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Vector = list[float]


class EmbedderError(Exception):
    """An embedder could not answer; the message names the cause, never the texts."""


class EmbedderRefused(EmbedderError):
    """The server refused the input itself (vLLM answers HTTP 400 for a text longer than the model's window): the
    texts' fault, deterministic, and no sign of the server's health (the breaker never sees it)."""


@dataclass(frozen=True)
class EmbedderConfig:
    """``baton.embedder`` in config.yaml. ``backend``: ``openai`` (any ``/v1/embeddings`` server) or an installed
    entry point's name; ``url`` and ``model`` for a server, ``path`` for a local model directory (never
    downloaded); ``api_key_env``: the environment variable holding the server's key, if it needs one;
    ``query_prefix`` / ``passage_prefix``: what a model trained with them wants before a question and before a
    stored line (e5: ``"query: "`` and ``"passage: "``), added by the ``openai`` backend; ``weak_below``: the cosine
    under which a hit ranked by meaning is weak for this model (None: the floor measured for all-MiniLM-L6-v2; each
    model has its own range: multilingual-e5-small's absent questions reach 0.872)."""

    backend: str
    url: str | None = None
    model: str | None = None
    path: str | None = None
    api_key_env: str | None = None
    timeout_seconds: float = 30.0
    query_prefix: str = ""
    passage_prefix: str = ""
    weak_below: float | None = None


class Embedder(Protocol):
    """Text to vectors. ``name`` says which model (a vector is only comparable with vectors of the same name).
    A backend answers a vector per text; the loaded embedder (``load_embedder``) answers None for a text the server
    refused even in parts (recall ranks that one lexically)."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[Vector | None]: ...


def embed_questions(embedder: Embedder, texts: Sequence[str]) -> list[Vector | None]:
    """Vectors of questions: the embedder's ``embed_query`` when it has one (a model that embeds a question
    otherwise than a passage, e5's ``query:`` prefix), else ``embed``."""
    ask = getattr(embedder, "embed_query", None)
    return ask(texts) if callable(ask) else embedder.embed(texts)


def weak_below(embedder: Embedder) -> float | None:
    """The embedder's own weak floor (``EmbedderConfig.weak_below``), when it says one."""
    floor = getattr(embedder, "weak_below", None)
    return floor if isinstance(floor, float) else None


def checked_vectors(vectors: object, count: int, *, refused: bool = False) -> list[Vector | None]:
    """``vectors`` if they are ``count`` non-empty lists of finite numbers of one dimension (or None, a refused
    text, when ``refused``), else ``EmbedderError``."""
    if not isinstance(vectors, list) or len(vectors) != count:
        raise EmbedderError(f"the embedder answered {type(vectors).__name__} of the wrong length, not {count} vectors")
    dimension = None
    for vector in vectors:
        if vector is None and refused:
            continue
        if not isinstance(vector, list) or not vector or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise EmbedderError("the embedder answered a vector that is not a non-empty list of finite numbers")
        if dimension is not None and len(vector) != dimension:
            raise EmbedderError(f"the embedder answered vectors of {dimension} and {len(vector)} dimensions")
        dimension = len(vector)
    return [None if vector is None else [float(x) for x in vector] for vector in vectors]
