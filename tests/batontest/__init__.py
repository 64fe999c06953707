"""Shared test support: tokenizer assets, loopback servers (importable as ``batontest``)."""
