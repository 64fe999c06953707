"""Embedders: text -> vectors, for recall's ranking by meaning (issue 32).

One small contract (``Embedder``), backends found by name (the built-in OpenAI-compatible ``/v1/embeddings``
client, or a distribution's ``baton_engine.embedders`` entry point, e.g. ``baton-engine-st`` for a local
sentence-transformers model), a circuit breaker around whichever is chosen, and the check a backend author runs
(``baton_engine.testing.embedder_conformance``). Knows nothing of recall or Hermes.
"""

from __future__ import annotations

from baton_engine.embedding.breaker import EmbedderBreaker
from baton_engine.embedding.contract import (Embedder, EmbedderConfig, EmbedderError, checked_vectors, embed_questions,
                                             weak_below)
from baton_engine.embedding.plugins import ENTRY_POINT_GROUP, load_embedder

__all__ = ["ENTRY_POINT_GROUP", "Embedder", "EmbedderBreaker", "EmbedderConfig", "EmbedderError",
           "checked_vectors", "embed_questions", "load_embedder",
           "weak_below"]
