"""find_secrets memoisation (a benchmark finding): same hits as a fresh scan, no text kept, bounded."""

from __future__ import annotations

from batontest.secrets_corpus import leaky_document, secret_values

from baton_engine.handoff import redact


def test_cached_hits_equal_a_fresh_scan_and_survive_caller_mutation() -> None:
    texts = [leaky_document(), *secret_values(), "plain text without anything secret"]
    for text in texts:
        first = redact.find_secrets(text)
        first.append(redact.SecretHit(0, 1, "caller-mutation"))
        assert redact.find_secrets(text) == redact._scan(text)
    assert redact.redact_text(leaky_document())[0] == redact.redact_text(leaky_document())[0]
    assert all(secret not in redact.redact_text(leaky_document())[0] for secret in secret_values())


def test_the_cache_holds_digests_only_and_stays_bounded() -> None:
    for n in range(redact._SCAN_CACHE_ENTRIES + 50):
        redact.find_secrets(f"line {n} token=ghp_{n:036d}")
    with redact._SCAN_CACHE_LOCK:
        keys = list(redact._SCAN_CACHE)
    assert len(keys) == redact._SCAN_CACHE_ENTRIES
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys)
    assert not any("ghp_" in str(hit) for hits in redact._SCAN_CACHE.values() for hit in hits)
