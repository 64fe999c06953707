"""Baton tokenizer backend: tiktoken."""
