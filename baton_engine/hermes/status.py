"""``baton_status`` / ``get_status()`` of one engine: numbers, ids, sources and reasons, never prompt text.

Why its own module: status reads every part (route, window, counter, breaker, anchor, policy, the last
output decision) and the engine should stay a thin adapter.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from baton_engine.hermes.config import ENGINE_NAME
from baton_engine.hermes.patches import activation
from baton_engine.hermes.runtime import get_runtime
from baton_engine.settings import describe
from baton_engine.tokens.counter import counting_mode


def engine_status(engine: Any) -> dict[str, Any]:
    settings = get_runtime().settings_for(engine.project_path())
    counting = engine.counting()
    counter = counting.counter()
    stats = counter.stats() if counter is not None else None
    remaining = engine.get_active_compression_failure_cooldown()
    window, window_source = engine.window_source()
    server = counting.server_window()
    limits = engine.limits()
    ledger = engine.ledger
    detector_view = engine.last_detector or {}
    current = activation()
    patches = current.patches if current is not None else []
    last = ledger.check.adjust(ledger.memo) if ledger.memo is not None else None  # on the provider's scale
    return {
        "engine": ENGINE_NAME,
        "active": True,
        "exact_estimators": {
            "installed": [f"{p.module}.{p.attr}" for p in patches if p.installed],
            "skipped": [p.skipped for p in patches if p.skipped],
        },
        "latest_handoff": engine.last_handoff,
        "recall": engine.recall_status(),
        "latest_handoff_path": engine.last_handoff_path,
        "last_compaction_scan": engine.last_compaction_scan,
        "validation_warnings": list(engine.last_validation_warnings),
        "route": {"model": engine.route.model, "base_url": engine.route.base_url,
                  "provider": engine.route.provider, "api_mode": engine.route.api_mode,
                  "changed_by": engine.route.changed_by},
        "window": {
            "hermes_context_length": engine.context_length, "server_max_model_len": server,
            "refusal_window": ledger.learned_window, "effective": window, "source": window_source,
            "mismatch": (f"{window_source} {window} < Hermes context_length {engine.context_length}; "
                         f"budgeting against {window}") if window != engine.context_length else None,
        },
        "verification": {**ledger.check.status(counting.source()), "refusals": ledger.refusals},
        "tokenizer": {
            "source": counting.source(), "chosen_by": counting.why,
            "counting": counting_mode(last) if last is not None else None,
            "exact": last.exact if last is not None else None,
            "fallbacks": stats.fallbacks if stats else 0,
            "last_fallback_reason": (last.fallback_reason if last is not None else None) or counting.counter_error,
            "error": counting.counter_error,  # the tokenizer cannot start: why, the setting, the fix
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
        "last_decision": engine.last_decision,
        "trigger": {"tokens": limits.trigger, "threshold": limits.threshold,
                    "fallback_token_threshold": limits.fallback_threshold, "ceiling": limits.ceiling,
                    "floor": limits.floor, "raised": limits.raised},
        "cooldown": {"post_compaction_tokens": engine.policy.post_compaction_tokens,
                     "growth_needed": limits.growth_needed, "stuck": engine.policy.stuck,
                     "failure_remaining_seconds": int(remaining["remaining_seconds"]) if remaining else 0},
        "degradation": {"reason": engine.degradation_reason, "detail": engine.degradation_detail,
                        "count": engine.degraded_count},
        "session_rotations": engine.session_rotations,
        "settings": describe(settings),  # this session's: each effective value and where it came from
        "settings_ignored": list(settings.ignored),  # unknown baton: keys (typos), each with a suggestion
    }


def agent_status(engine: Any) -> dict[str, Any]:
    """What the agent's ``baton_status`` adds to the store's counts (docs/troubleshooting.md): the route, the
    window it budgets against and where that comes from, how its requests are counted, and the compaction
    trigger with ``stuck``; a part of ``engine_status``, so the two never disagree."""
    full = engine_status(engine)
    tokenizer, window, cooldown = full["tokenizer"], full["window"], full["cooldown"]
    return {
        "route": full["route"],
        "window": {"tokens": window["effective"], "source": window["source"], "mismatch": window["mismatch"]},
        "counting": {"mode": tokenizer["counting"], "source": tokenizer["source"], "exact": tokenizer["exact"],
                     "error": tokenizer["error"], "fallback_reason": tokenizer["last_fallback_reason"]},
        "trigger": {**full["trigger"], "stuck": cooldown["stuck"], "growth_needed": cooldown["growth_needed"],
                    "post_compaction_tokens": cooldown["post_compaction_tokens"]},
        "settings_ignored": full["settings_ignored"],
    }
