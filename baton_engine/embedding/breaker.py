"""A circuit breaker around an embedder: a failing server is asked once per cool-off, not on every search.

Same policy as the tokenizer breaker (``tokens/breaker.py``): after a failure, fail fast for the cool-off, then
let one call probe; the cool-off doubles up to a cap. While open, recall ranks lexically (status says so). A
refused input (``EmbedderRefused``: the texts' fault, not the server's) never reaches it: ``load_embedder`` puts
``refusals.RefusalSplitter`` inside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from baton_engine.embedding.contract import (Embedder, EmbedderError, Vector, checked_vectors, embed_questions,
                                             weak_below)
from baton_engine.tokens.breaker import DEFAULT_COOL_OFF_SECONDS, DEFAULT_MAX_COOL_OFF_SECONDS


class EmbedderBreaker:
    """Wraps ``inner``; thread-safe; answers are checked (``checked_vectors``: None for a refused text) so a
    malformed one trips it too."""

    def __init__(self, inner: Embedder, *, cool_off_seconds: float = DEFAULT_COOL_OFF_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self._cool_off = cool_off_seconds
        self._next_cool_off = cool_off_seconds
        self._clock = clock
        self._open_until = 0.0
        self._probing = False
        self._lock = threading.Lock()
        self.last_error: str | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def weak_below(self) -> float | None:
        return weak_below(self.inner)

    @property
    def healthy(self) -> bool:
        with self._lock:
            return self._clock() >= self._open_until

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        return self._guarded(self.inner.embed, texts)

    def embed_query(self, texts: Sequence[str]) -> list[Vector | None]:
        return self._guarded(lambda asked: embed_questions(self.inner, asked), texts)

    def _guarded(self, embed: Callable[[list[str]], object], texts: Sequence[str]) -> list[Vector | None]:
        with self._lock:
            if self._clock() < self._open_until or self._probing:
                raise EmbedderError(f"embedder circuit open after {self.last_error}; retrying later")
            probing = self._probing = self._open_until > 0
        try:
            vectors = checked_vectors(embed(list(texts)), len(texts), refused=True)
        except Exception as exc:  # noqa: BLE001  any failure of a backend (third-party code) opens the circuit
            with self._lock:
                self.last_error = type(exc).__name__
                self._open_until = self._clock() + self._next_cool_off
                self._next_cool_off = min(2 * self._next_cool_off, max(DEFAULT_MAX_COOL_OFF_SECONDS, self._cool_off))
                self._probing = False
            if isinstance(exc, EmbedderError):
                raise
            raise EmbedderError(f"embedder failed: {type(exc).__name__}") from None
        with self._lock:
            if probing or self._open_until:
                self._open_until, self._next_cool_off = 0.0, self._cool_off
            self._probing = False
        return vectors
