"""Recall: needles found after a compaction, facts asked in other words (lexical and by meaning), the search's
latency, vector indexes, and should_compress beside a large store."""
