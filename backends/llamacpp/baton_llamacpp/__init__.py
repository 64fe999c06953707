"""Baton tokenizer backend: exact counts from a llama.cpp llama-server's /apply-template and /tokenize."""

from __future__ import annotations

from .backend import LlamaCppBackend

__all__ = ["LlamaCppBackend"]
