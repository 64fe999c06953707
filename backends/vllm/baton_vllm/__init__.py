"""Baton tokenizer backend: exact counts from a vLLM server's /tokenize."""

from __future__ import annotations

from .backend import MaxModelLenMismatch, ToolCallHistoryUnsupported, VllmBackend

__all__ = ["MaxModelLenMismatch", "ToolCallHistoryUnsupported", "VllmBackend"]
