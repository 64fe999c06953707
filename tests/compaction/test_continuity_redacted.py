"""The compaction record adds its continuity state without a second redaction pass; that is safe only if every
string of the state is already redacted. Checked with every sample of the secrets corpus placed in each place
a continuity string comes from (the user's words, clipped or whole; commands; paths; patterns; error lines;
recurring tokens)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from batontest.secrets_corpus import SAMPLES
from batontest.transcripts import call, result

from baton_engine.compaction import continuity
from baton_engine.handoff.redact import redact_text
from baton_engine.tokens.rough import estimate_tokens_rough


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _transcript(secret: str) -> list[dict[str, Any]]:
    filler = " ".join(f"word{n}" for n in range(400))
    return [
        {"role": "user", "content": f"You must never log {secret}; the deadline is Friday."},
        {"role": "user", "content": f"{filler} then use {secret} and also {filler}"},  # long: clipped
        {"role": "assistant", "content": f"Working with {secret}.", "tool_calls": [
            call("a", "terminal", command=f"deploy --token {secret} && cat conf/{secret}.env"),
            call("b", "read_file", path=f"src/{secret}.py"),
            call("c", "search_files", pattern=secret, path="src"),
            call("d", "write_file", path=f"out/{secret}.txt", content="x")]},
        result("a", output=f"error: token {secret} rejected\nTraceback {secret}", exit_code=1, error=None),
        result("b", content=f"1|{secret}\n2|{secret}", total_lines=2),
        result("c", matches=[secret], error=f"failed on {secret}"),
        result("d", bytes_written=1),
        {"role": "user", "content": f"Recall {secret} again: {secret} {secret}"},
    ]


@pytest.mark.parametrize("budget", [500, 1500])
@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_every_continuity_string_is_already_redacted(sample, budget):
    state = continuity.collect(_transcript(sample.text), continuity.Recall(None, lambda: []), budget,
                               estimate_tokens_rough).to_state()
    text = json.dumps(state, ensure_ascii=False)
    assert not any(secret in text for secret in sample.secrets), sample.name
    for string in _strings(state):
        assert redact_text(string)[1] == [], (sample.name, string)
    assert state["user_words"]["items"], "the user's words were collected"
