"""Counting tokens: the backends' throughput and round trips, the rough estimators against the real tokenizer, counts
the provider confirms, usage-anchored counts, the circuit breaker, and /tokenize calls in the real Hermes loop."""
