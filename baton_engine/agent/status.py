"""``baton_status`` / the status of one agent's Baton: numbers, ids, sources and reasons, never prompt text.

Why its own module: status reads every collaborator (the request budgeter's route, window, counter, breaker,
anchor and last output decision; the compaction runner's policy, detector and lineage; recall) and the host's
engine should stay a thin adapter: it adds only what is its own (Hermes: the engine's name, its patches).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from baton_engine.agent import metrics
from baton_engine.agent.compactions import CompactionRunner
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import RequestBudgeter
from baton_engine.agent.runtime import get_runtime
from baton_engine.agent.tools import schema_tokens
from baton_engine.metrics import telemetry
from baton_engine.settings import describe
from baton_engine.tokens.counter import counting_mode


def engine_status(requests: RequestBudgeter, compaction: CompactionRunner, recall: RecallBinding) -> dict[str, Any]:
    """Everything one agent's Baton can say of itself; its host's name words the window it configures."""
    settings = get_runtime().settings_for(requests.project.path())
    counting = requests.counting()
    counter = counting.counter()
    stats = counter.stats() if counter is not None else None
    remaining = compaction.failure_cooldown()
    window, window_source = requests.window_source()
    server = counting.server_window()
    limits = requests.limits()
    ledger = requests.ledger
    route = requests.route
    context_length = requests.window.context_length
    detector_view = compaction.last_detector or {}
    last = ledger.check.adjust(ledger.memo) if ledger.memo is not None else None  # on the provider's scale
    # what Baton adds to every request: its tools' schemas (the ``tools`` setting), counted on this route (the
    # counter's cache answers a repeat); the metrics log keeps the figure for ``baton report``
    tools_figure = {"offered": list(settings.tools),
                    "schema_tokens": schema_tokens(counting.count_chat, settings.tools), "counted_by": counting.source()}
    metrics.tools(requests, tools_figure)
    host = requests.host.name
    return {
        "latest_handoff": compaction.last_handoff,
        "recall": recall.status(compaction.session_id),
        "latest_handoff_path": compaction.last_handoff_path,
        "last_compaction_scan": compaction.last_compaction_scan,
        "validation_warnings": list(compaction.last_validation_warnings),
        "telemetry": telemetry.status(),  # OpenTelemetry: on (where to) or off (why)
        "route": {"model": route.model, "base_url": route.base_url, "provider": route.provider,
                  "api_mode": route.api_mode, "changed_by": route.changed_by},
        "window": {
            f"{host.lower()}_context_length": context_length, "server_max_model_len": server,
            "refusal_window": ledger.learned_window, "effective": window, "source": window_source,
            "server_stated": ledger.served.tokens if ledger.served is not None else None,  # asked after a cut
            "mismatch": (f"{window_source} {window} < {host} context_length {context_length}; "
                         f"budgeting against {window}") if window != context_length else None,
        },
        "verification": {**ledger.check.status(counting.source()), "refusals": ledger.refusals},
        # the other routes this agent keeps state for (a switch back, auxiliary models), least recently used first
        "other_routes": [{"model": model, "base_url": base_url, "provider": provider, "api_mode": api_mode,
                          "verdict": kept.check.verdict, "ratio": round(kept.check.ratio, 4),
                          "requests_seen": kept.check.requests_seen}
                         for (model, base_url, provider, api_mode), kept in requests.left.routes()],
        "tokenizer": {
            "source": counting.source(), "chosen_by": counting.why,
            "counting": counting_mode(last) if last is not None else None,
            "exact": last.exact if last is not None else None,
            # images and documents in the last count: an estimate by the providers' published rules (tokens.media),
            # never a tokenizer's count; the route's verification learns its scale apart from the text's
            "media_tokens_estimated": last.media_tokens if last is not None else None,
            "media_rule": requests.media_rule(),  # whose rule priced them: anthropic, openai, or bound (the larger)
            "fallbacks": stats.fallbacks if stats else 0,
            "last_fallback_reason": (last.fallback_reason if last is not None else None) or counting.counter_error,
            "error": counting.counter_error,  # the tokenizer cannot start: why, the setting, the fix
            "counter": counting.counter_state,  # starting (counts are estimates meanwhile) | ready | unavailable
            "breaker": asdict(counter.breaker_state()) if counter is not None else None,
            "anchor_observations": ledger.anchor.observations,
            "views_counted": ledger.counted, "view_repeats": ledger.memo_hits,
        },
        "output_budget": {
            "last_action": ledger.output.action if ledger.output else None,
            "last_reason": ledger.output.reason if ledger.output else None,
            "auxiliary_last_reason": ledger.auxiliary_output.reason if ledger.auxiliary_output else None,
            "short_caps": ledger.short_caps, "requests_shortened": ledger.request_compactions,
        },
        "detector": {"pressure": detector_view.get("pressure"), "readiness": detector_view.get("readiness"),
                     "reasons": detector_view.get("reasons", [])},
        "last_decision": compaction.last_decision,
        "trigger": {"tokens": limits.trigger, "threshold": limits.threshold,
                    "fallback_token_threshold": limits.fallback_threshold, "ceiling": limits.ceiling,
                    "floor": limits.floor, "raised": limits.raised},
        "cooldown": {"post_compaction_tokens": compaction.policy.post_compaction_tokens,
                     "growth_needed": limits.growth_needed, "stuck": compaction.policy.stuck,
                     "failure_remaining_seconds": int(remaining["remaining_seconds"]) if remaining else 0},
        "degradation": {"reason": compaction.degradation_reason, "detail": compaction.degradation_detail,
                        "count": compaction.degraded_count},
        "session_rotations": compaction.session_rotations,
        "tools": tools_figure,
        "notices": requests.notices.lines(),  # what the terminal was told (window, calibration), once each
        "settings": describe(settings),  # this session's: each effective value and where it came from
        "settings_ignored": list(settings.ignored),  # unknown baton: keys (typos), each with a suggestion
    }


def agent_status(requests: RequestBudgeter, compaction: CompactionRunner, recall: RecallBinding) -> dict[str, Any]:
    """What the agent's ``baton_status`` adds to the store's counts (docs/troubleshooting.md): the route, the
    window it budgets against and where that comes from, how its requests are counted, and the compaction
    trigger with ``stuck``; a part of ``engine_status``, so the two never disagree."""
    full = engine_status(requests, compaction, recall)
    tokenizer, window, cooldown = full["tokenizer"], full["window"], full["cooldown"]
    return {
        "route": full["route"],
        "window": {"tokens": window["effective"], "source": window["source"], "mismatch": window["mismatch"]},
        "counting": {"mode": tokenizer["counting"], "source": tokenizer["source"], "exact": tokenizer["exact"],
                     "error": tokenizer["error"], "fallback_reason": tokenizer["last_fallback_reason"]},
        "trigger": {**full["trigger"], "stuck": cooldown["stuck"], "growth_needed": cooldown["growth_needed"],
                    "post_compaction_tokens": cooldown["post_compaction_tokens"]},
        "tools": full["tools"],
        "notices": full["notices"],
        "settings_ignored": full["settings_ignored"],
    }
