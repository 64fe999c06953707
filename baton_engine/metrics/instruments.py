"""Which OpenTelemetry instrument reads which metrics event field, and the spans: pure data, no OpenTelemetry.

Why its own module: one definition of each figure. Every reading names an event and field of ``fields.FIELDS``
(``check_definitions`` runs at import: a renamed or retyped field fails there, not silently in production); the
GenAI semantic conventions' names where they have one (token usage by type, operation duration), Baton's own
(``baton.*``) for the rest; metric attributes only from few-valued fields. ``otel.py`` (the ``otel`` extra)
measures them; this module needs none of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton_engine.metrics.fields import FIELDS, FLAG, INT, NUMBER, ROUTE_CHECK, TEXT

# the GenAI semantic conventions (gen_ai.* metrics and attributes; gen_ai.provider.name replaced gen_ai.system)
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
OPERATION_NAME, PROVIDER_NAME, REQUEST_MODEL, TOKEN_TYPE = (
    "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.token.type")
# the conventions' advised bucket boundaries for these two histograms
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
BATON_SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclass(frozen=True)
class Instrument:
    name: str
    kind: str  # "histogram", "counter" or "gauge"
    unit: str
    description: str
    buckets: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Reading:
    """One measurement an event gives: ``field`` of ``event`` (a number of ``fields.FIELDS``; None: the event
    itself counts 1), times ``scale``; only when the FLAG field ``only_if`` is true; with ``fixed`` attributes."""

    instrument: Instrument
    event: str
    field: str | None = None
    scale: float = 1.0
    only_if: str | None = None
    fixed: tuple[tuple[str, str], ...] = ()


TOKENS = Instrument(TOKEN_USAGE, "histogram", "{token}", "Number of input and output tokens used (the provider's "
                    "usage of each response)", TOKEN_BUCKETS)
DURATION = Instrument(OPERATION_DURATION, "histogram", "s", "GenAI operation duration: from Baton's budgeted "
                      "request to its response's usage", SECONDS_BUCKETS)
REQUESTS = Instrument("baton.requests", "counter", "{request}", "Provider requests Baton budgeted, by its decision")
REQUEST_TOKENS = Instrument("baton.request.tokens", "histogram", "{token}", "Baton's count of each budgeted "
                            "request's prompt", TOKEN_BUCKETS)
BUDGET_SECONDS = Instrument("baton.request.duration", "histogram", "s", "Time Baton took to count and budget a "
                            "request", BATON_SECONDS_BUCKETS)
SHORTENED = Instrument("baton.requests.shortened", "counter", "{request}", "Requests whose prompt alone did not "
                       "fit, shortened for that one request (the transcript unchanged)")
COUNTED = Instrument("baton.tokens.counted", "counter", "{token}", "Baton's count of the requests whose usage came "
                     "back (compare with baton.tokens.reported)")
REPORTED = Instrument("baton.tokens.reported", "counter", "{token}", "The provider's prompt tokens of the same "
                      "requests")
CALIBRATION = Instrument("baton.calibration.ratio", "gauge", "1", "The route's provider-to-tokenizer scale "
                         "(1.0: counts confirmed or not yet checked)")
COMPACTIONS = Instrument("baton.compactions", "counter", "{compaction}", "Compactions, by outcome")
COMPACTION_SECONDS = Instrument("baton.compaction.duration", "histogram", "s", "Time one compaction took",
                                BATON_SECONDS_BUCKETS)
COMPACTION_TOKENS = Instrument("baton.compaction.tokens", "histogram", "{token}", "The request's size before and "
                               "after a compaction", TOKEN_BUCKETS)
REFUSALS = Instrument("baton.refusals.learned", "counter", "{refusal}", "Provider refusals Baton read and learned "
                      "from (a stated window, an exact prompt size)")
CACHE_TOKENS = Instrument("baton.prompt.tokens", "counter", "{token}", "Prompt tokens of the main responses by how "
                          "the provider read them: sent (all), read from its cache, uncached (the prefill it did)")
RECLAIMED = Instrument("baton.reclaimed.tokens", "counter", "{token}", "Tokens a committed prune took out of the "
                       "request (each later request is that much shorter)")
PRUNES = Instrument("baton.prunes", "counter", "{prune}", "Prunes of answered tool output, committed or declined, by "
                    "reason")

READINGS: tuple[Reading, ...] = (
    Reading(TOKENS, "usage", "reported", fixed=((TOKEN_TYPE, "input"),)),
    Reading(TOKENS, "usage", "output", fixed=((TOKEN_TYPE, "output"),)),
    Reading(REPORTED, "usage", "reported"),
    *(Reading(instrument, kind, field, scale, only_if) for kind in ("request", "aux_request")
      for instrument, field, scale, only_if in ((REQUESTS, None, 1.0, None), (REQUEST_TOKENS, "prompt", 1.0, None),
                                                (BUDGET_SECONDS, "ms", 0.001, None),
                                                (SHORTENED, None, 1.0, "shortened"))),
    Reading(COMPACTIONS, "compaction"),
    Reading(COMPACTION_SECONDS, "compaction", "ms", 0.001),
    Reading(COMPACTION_TOKENS, "compaction", "before", fixed=(("baton.compaction.stage", "before"),)),
    Reading(COMPACTION_TOKENS, "compaction", "after", fixed=(("baton.compaction.stage", "after"),)),
    Reading(REFUSALS, "refusal"),
    Reading(CACHE_TOKENS, "usage", "reported", fixed=(("baton.prompt.part", "sent"),)),
    Reading(CACHE_TOKENS, "usage", "cache_read", fixed=(("baton.prompt.part", "cache_read"),)),
    Reading(CACHE_TOKENS, "usage", "uncached", fixed=(("baton.prompt.part", "uncached"),)),
    Reading(RECLAIMED, "prune", "reclaimed", only_if="committed"),
    Reading(PRUNES, "prune"),
)
# measurements made from two events (the request a usage answers): the usage's time and the request's count
PAIRED = (DURATION, COUNTED)
CALIBRATION_KEY = "ratio"  # usage.route_check.ratio, a number in fields.ROUTE_CHECK

# the metric attributes each event gives (few values each), from its TEXT / FLAG fields
ATTRIBUTES: dict[str, dict[str, str]] = {
    "request": {"model": REQUEST_MODEL, "provider": PROVIDER_NAME, "action": "baton.budget.action",
                "mode": "baton.count.mode"},
    "compaction": {"mode": "baton.count.mode", "status": "baton.handoff.status", "degraded": "baton.degraded"},
    "refusal": {"kind": "baton.refusal.kind"},
    "prune": {"committed": "baton.prune.committed", "reason": "baton.prune.reason"},
}
ATTRIBUTES["aux_request"] = ATTRIBUTES["request"]
# event -> (span name, its attributes' prefix)
SPANS = {"request": ("baton.request.budget", "baton.request"), "aux_request": ("baton.request.budget", "baton.request"),
         "compaction": ("baton.compaction", "baton.compaction")}


def check_definitions() -> None:
    """Every reading names a number of its event in ``fields.FIELDS`` (or a FLAG for ``only_if``), every
    attribute a text or flag: a renamed field fails here, at import, not silently in production."""
    for reading in READINGS:
        known = FIELDS[reading.event]
        if reading.field is not None and known[reading.field] not in (INT, NUMBER):
            raise TypeError(f"{reading.event}.{reading.field} is no number")
        if reading.only_if is not None and known[reading.only_if] != FLAG:
            raise TypeError(f"{reading.event}.{reading.only_if} is no flag")
    for event, names in ATTRIBUTES.items():
        for field in names:
            if FIELDS[event][field] not in (TEXT, FLAG):
                raise TypeError(f"{event}.{field} is no text")
    if FIELDS["request"]["prompt"] != INT or FIELDS["usage"]["request"] != INT or \
            ROUTE_CHECK[CALIBRATION_KEY] != NUMBER:
        raise TypeError("the paired readings' fields changed")


check_definitions()
