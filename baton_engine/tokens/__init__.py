"""Exact token counting through pluggable tokenizer backends (no Hermes import here)."""
