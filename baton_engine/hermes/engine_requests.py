"""The engine's request side: every provider request counted once in its agent's view, budgeted by the core.

Why a module of its own: the engine adapts two Hermes surfaces — the context-engine lifecycle
(``engine.py``) and the requests of the agent loop (this mixin: usage, the 0.20+ request hooks, the
estimators' and the middleware's counts, the output budget). State lives on the engine (``route``,
``ledger``), so Hermes' per-agent ``copy.deepcopy`` copies it whole.
"""

from __future__ import annotations

import logging
from typing import Any

from baton_engine.budget import apply_output
from baton_engine.hermes import request_view
from baton_engine.hermes.runtime import get_runtime, usage_value
from baton_engine.request import ProviderRequest
from baton_engine.tokens.contract import TokenCount

LOGGER = logging.getLogger("baton_engine.hermes")


class RequestBudgeting:
    """Mixed into ``BatonContextEngine``: needs ``ledger``, ``route`` and ``effective_window()``."""

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Real usage: Hermes' counters, and the exact size of the request just sent (the anchor)."""
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.turns += 1
        self.ledger.observe_usage(self.last_prompt_tokens)

    def on_turn_complete(self, messages: Any = None, usage: Any = None, **_: Any) -> None:
        """Hermes 0.20+: the turn's usage, when the host has not reported it through update_from_response."""
        if isinstance(usage, dict):
            self.ledger.observe_usage(usage_value(usage, "prompt_tokens", "input_tokens"))

    def select_context(self, request_messages: Any = None, *, conversation_messages: Any = None,
                       incoming_message: Any = None, budget_tokens: int = 0, **_: Any) -> None:
        """Hermes 0.20+ asks on EVERY provider request (retries too): count it in this agent's frame, so
        the middleware's count of the same request is a repeat. Returns None: Baton changes what the
        model sees only through ``compress()``, where the handoff makes the change auditable."""
        try:
            if isinstance(request_messages, list):
                self.count(self.ledger.view_of(request_messages))
                self.prepare_compaction(request_messages)
        except Exception as exc:  # noqa: BLE001
            LOGGER.warning("baton select_context failed type=%s", type(exc).__name__)
        return None

    # ---- counting: one request view, one count ----------------------------------------------------

    def count(self, view: ProviderRequest) -> TokenCount:
        """The view's provider-visible size: exact, anchored on real usage, or rough + margin."""
        return self.ledger.count(view, get_runtime())

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        """An estimator's arguments, counted as the request the transport will send (shares its count); the
        messages it added are scanned for the next compaction."""
        counted = self.count(request_view.from_estimate(messages, system_prompt=system_prompt, tools=tools,
                                                        frame=self.ledger.frame))
        self.prepare_compaction(messages)
        return counted

    def on_request(self, request: dict[str, Any], *, api_mode: Any = None, model: Any = None, base_url: Any = None,
                   provider: Any = None, auxiliary: bool = False) -> dict[str, Any] | None:
        """A provider request about to be sent: its output budget, applied in the field it already uses.

        Returns the rewritten request, or None to leave it unchanged."""
        view = request_view.from_provider_kwargs(request, api_mode)
        if view is None:
            return None
        if not auxiliary:
            self.route = self.route.moved(model=model, base_url=base_url, provider=provider, api_mode=api_mode,
                                          why="request")
            self.ledger.sent_request(view)
        counted = self.count(view)
        settings = get_runtime().settings
        decision, rewritten = apply_output(request, counted, window=self.effective_window(), cap=view.cap,
                                           min_output_tokens=settings.min_output_tokens,
                                           fallback_margin_tokens=settings.fallback_margin_tokens)
        self.ledger.decided(decision, auxiliary=auxiliary)
        LOGGER.info("baton output budget action=%s prompt=%s source=%s aux=%s", decision.action, counted.tokens,
                    counted.source, auxiliary)
        return rewritten

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        """An auxiliary call is budgeted against this window only when it goes to this agent's own model."""
        return self.route.serves(model, base_url)
