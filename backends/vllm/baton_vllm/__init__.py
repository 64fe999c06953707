"""Baton tokenizer backend: vllm."""
