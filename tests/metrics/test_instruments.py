"""What each OpenTelemetry instrument reads (``metrics/instruments.py``): the GenAI semantic conventions' own
names, Baton's ``baton.*`` for the rest, and only fields the metrics events define. Pure data: no extra needed
(the conventions' package, when installed, is the reference for the names)."""

from __future__ import annotations

import pytest

from baton_engine.metrics import instruments


def test_the_genai_names_are_the_semantic_conventions_own() -> None:
    pytest.importorskip("opentelemetry.semconv", reason="the otel extra (tox env py311 installs it)")
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as attrs
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as names

    assert instruments.TOKEN_USAGE == names.GEN_AI_CLIENT_TOKEN_USAGE
    assert instruments.OPERATION_DURATION == names.GEN_AI_CLIENT_OPERATION_DURATION
    assert (instruments.OPERATION_NAME, instruments.PROVIDER_NAME, instruments.REQUEST_MODEL,
            instruments.TOKEN_TYPE) == (attrs.GEN_AI_OPERATION_NAME, attrs.GEN_AI_PROVIDER_NAME,
                                        attrs.GEN_AI_REQUEST_MODEL, attrs.GEN_AI_TOKEN_TYPE)
    every = {reading.instrument for reading in instruments.READINGS} | {*instruments.PAIRED, instruments.CALIBRATION}
    assert {i.name for i in every if i.name.startswith("gen_ai.")} == {instruments.TOKEN_USAGE,
                                                                      instruments.OPERATION_DURATION}
    assert {i.name for i in every if not i.name.startswith("gen_ai.")} == {
        "baton.requests", "baton.request.tokens", "baton.request.duration", "baton.requests.shortened",
        "baton.tokens.counted", "baton.tokens.reported", "baton.compactions", "baton.compaction.duration",
        "baton.compaction.tokens", "baton.refusals.learned", "baton.calibration.ratio", "baton.prompt.tokens",
        "baton.reclaimed.tokens", "baton.prunes"}


def test_an_instrument_reads_only_a_field_the_events_define(monkeypatch: pytest.MonkeyPatch) -> None:
    """One definition of each event (``fields.FIELDS``): a reading of a text field, or of a field no event has,
    fails when the module loads (``check_definitions``), not silently while Hermes runs."""
    instruments.check_definitions()
    monkeypatch.setattr(instruments, "READINGS", (instruments.Reading(instruments.REQUESTS, "request", "mode"),))
    with pytest.raises(TypeError, match="request.mode is no number"):
        instruments.check_definitions()
    unknown = instruments.Reading(instruments.REQUESTS, "request", "prompt_tokens")
    monkeypatch.setattr(instruments, "READINGS", (unknown,))
    with pytest.raises(KeyError, match="prompt_tokens"):
        instruments.check_definitions()
