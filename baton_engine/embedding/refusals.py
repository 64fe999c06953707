"""A text the embedding server refuses costs only itself, not its batch.

vLLM answers HTTP 400 for a whole batch when one text is longer than the model's window (it does not truncate
unless asked: the ``openai`` backend asks when the server says its window). A refused batch (``EmbedderRefused``)
is sent again one text at a time; a text still refused is split at the line boundary nearest its middle, at most
``MAX_SPLIT_DEPTH`` times, and its parts' normalised vectors averaged and renormalised (a vector of the whole
text); a text none of whose parts the server takes gets None, and recall ranks it lexically. A refusal is the
input's fault, deterministic: it never reaches the breaker. Logs give counts, never text.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from baton_engine.embedding.contract import Embedder, EmbedderRefused, Vector, embed_questions, weak_below

LOGGER = logging.getLogger("baton_engine.embedding")
MAX_SPLIT_DEPTH = 3  # a text is cut into at most 8 parts (15 requests at worst)


class RefusalSplitter:
    """Wraps a backend: ``embed`` answers a vector per text, or None for a text refused even in parts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def weak_below(self) -> float | None:
        return weak_below(self.inner)

    def embed_query(self, texts: Sequence[str]) -> list[Vector | None]:
        """Questions go as they are (a question is short; a refused one is the caller's ``EmbedderRefused``)."""
        return embed_questions(self.inner, list(texts))

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        texts = list(texts)
        try:
            return self.inner.embed(texts)
        except EmbedderRefused:
            pass
        lone = len(texts) == 1  # refused alone already: straight to its parts
        answers = [self._alone(text, 0, ask=not lone) for text in texts]
        alone = sum(vector is not None and not split for vector, split in answers)
        in_parts = sum(vector is not None and split for vector, split in answers)
        LOGGER.warning("embedder: the server refused a batch of %d text(s); %d embedded alone, %d in parts, %d not "
                       "at all (ranked lexically)", len(texts), alone, in_parts, len(texts) - alone - in_parts)
        return [vector for vector, _ in answers]

    def _alone(self, text: str, depth: int, ask: bool = True) -> tuple[Vector | None, bool]:
        """(the text's vector or None, whether it was split); ``ask=False``: known refused, split at once."""
        if ask:
            try:
                (vector,) = self.inner.embed([text])
                return vector, False
            except EmbedderRefused:
                pass
        parts = halves(text) if depth < MAX_SPLIT_DEPTH else None
        if parts is None:
            return None, False
        found = [vector for vector in (self._alone(part, depth + 1)[0] for part in parts) if vector is not None]
        return (mean_direction(found) if found else None), True


def halves(text: str) -> tuple[str, str] | None:
    """``text`` cut at the line boundary nearest its middle; None for a single line."""
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    ends, end = [], 0
    for line in lines[:-1]:
        end += len(line)
        ends.append(end)
    cut = min(ends, key=lambda at: abs(2 * at - len(text)))
    return text[:cut], text[cut:]


def mean_direction(vectors: Sequence[Vector]) -> Vector:
    """The normalised mean of the normalised ``vectors``."""
    total = [0.0] * len(vectors[0])
    for vector in vectors:
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        total = [t + x / norm for t, x in zip(total, vector, strict=True)]
    norm = math.sqrt(sum(x * x for x in total)) or 1.0
    return [x / norm for x in total]
