"""Compaction: the growing session's compactions and gaps, reclamation against the prompt cache, the lines a brief
states, and the soak (fuzzed compress() calls, SIGKILLed store writers)."""
