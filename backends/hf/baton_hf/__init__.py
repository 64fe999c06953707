"""Baton tokenizer backend: hf."""
