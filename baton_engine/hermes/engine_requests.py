"""The engine's request side: every provider request counted once in its agent's view, budgeted by the core.

Why a module of its own: the engine adapts two Hermes surfaces — the context-engine lifecycle
(``engine.py``) and the requests of the agent loop (this mixin: usage, the 0.20+ request hooks, the
estimators' and the middleware's counts, the output budget). State lives on the engine (``route``,
``ledger``), so Hermes' per-agent ``copy.deepcopy`` copies it whole.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from baton_engine.budget import Decision, Margins, apply_output, decide, write_cap
from baton_engine.compaction.builder import degrade_messages
from baton_engine.hermes import metrics, request_view
from baton_engine.hermes.ledger import frame_tokens
from baton_engine.hermes.runtime import get_runtime
from baton_engine.policy import Limits
from baton_engine.request import ProviderRequest, find_cap, find_thinking_budget
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import RouteCheck, reported_prompt_tokens, usage_value

if TYPE_CHECKING:
    from baton_engine.refusal import Refusal

LOGGER = logging.getLogger("baton_engine.hermes")


class RequestBudgeting:
    """Mixed into ``BatonContextEngine``: needs ``ledger``, ``memos``, ``route``, ``counting()``, ``move_route()``,
    ``learn_window()``, ``effective_window()``, ``_settings()`` and ``prepare_compaction()``."""

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Real usage: Hermes' counters, and the exact size of the request just sent (the anchor). Consumes
        the completed-compaction latch: Hermes 0.22 read it just before this call, and it answers only the
        first response after the compaction."""
        self._verify_compaction_cleared_threshold = False
        if not isinstance(usage, dict):
            return
        self.last_prompt_tokens = usage_value(usage, "prompt_tokens", "input_tokens")
        self.last_completion_tokens = usage_value(usage, "completion_tokens", "output_tokens")
        total = usage_value(usage, "total_tokens")
        self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens
        self.turns += 1
        self.observe_reported(reported_prompt_tokens(usage))

    def on_turn_complete(self, messages: Any = None, usage: Any = None, **_: Any) -> None:
        """Hermes 0.20+: the usage of the turn's last response, which answers the last request sent. It feeds
        the anchor and the route's verification when ``update_from_response`` did not already report that
        request's size (0.22 reports both; a host path that skips update_from_response does not); never
        raises (observe-only hook)."""
        try:
            if isinstance(usage, dict) and not self.ledger.usage_observed():
                self.observe_reported(reported_prompt_tokens(usage))
        except Exception as exc:  # noqa: BLE001 - Hermes' on_turn_complete contract: observe only
            LOGGER.warning("baton on_turn_complete failed type=%s", type(exc).__name__)

    def observe_reported(self, prompt_tokens: int) -> None:
        """The provider's size of the last request sent: the anchor, and the check of this route's counts;
        said once (a warning, then status and doctor) when it shows the counts are off."""
        flipped = self.ledger.observe_usage(prompt_tokens)
        metrics.reported(self, prompt_tokens, flipped=flipped)
        if flipped:
            check = self.ledger.check
            LOGGER.warning("baton counts disagree with the provider: counted=%s reported=%s ratio=%.3f source=%s; "
                           "budgets now use the provider's scale (calibrated)", check.last.counted if check.last
                           else None, prompt_tokens, check.ratio, self.counting().source())

    def observe_refusal(self, refusal: Refusal) -> None:
        """A provider refused a request as too long: its window and prompt size become this route's truth, so
        the next request (a retry of the same one too) fits."""
        if refusal.window is not None and refusal.window > 0:
            self.learn_window(refusal.window)
        if refusal.prompt_exact and refusal.prompt_tokens is not None and refusal.prompt_tokens > 0:
            self.observe_reported(refusal.prompt_tokens)  # a bound ("at least N") is no size to calibrate on
        self.ledger.refusals += 1
        metrics.refusal(self, refusal)
        LOGGER.warning("baton saw a context-length refusal kind=%s window=%s prompt=%s", refusal.kind,
                       refusal.window, refusal.prompt_tokens)

    def select_context(self, request_messages: Any = None, *, conversation_messages: Any = None,
                       incoming_message: Any = None, budget_tokens: int = 0, **_: Any) -> list[Any] | None:
        """Hermes 0.20+ asks on EVERY provider request (retries too), BEFORE its sanitizers strip and
        canonicalise the messages: a count here is of another view than the one sent, a second tokenizer
        round trip per request. So it only scans the new messages ahead for the next compaction and returns
        None (the request as it is). The request is counted once, as sent: the pre-API estimate and the
        middleware share that count, a retry is a memo hit, and a request whose prompt alone cannot fit is
        shortened there (``on_request`` -> ``request_only_compaction``)."""
        if isinstance(request_messages, list):
            self.prepare_compaction(request_messages)
        return None

    # ---- counting: one request view, one count ----------------------------------------------------

    def count(self, view: ProviderRequest) -> TokenCount:
        """The view's provider-visible size: exact, anchored on real usage, or rough + margin."""
        return self.ledger.count(view, self.counting(), by_content=self.route.api_mode in request_view.WIRE_MODES)

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        """An estimator's arguments, counted as the request the transport will send (shares its count); the
        messages it added are scanned for the next compaction."""
        counted = self.count(request_view.from_estimate(messages, system_prompt=system_prompt, tools=tools,
                                                        frame=self.ledger.frame, memo=self.memos.projected))
        self.prepare_compaction(messages)
        return counted

    def on_request(self, request: dict[str, Any], *, api_mode: Any = None, model: Any = None, base_url: Any = None,
                   provider: Any = None, auxiliary: bool = False) -> dict[str, Any] | None:
        """A provider request about to be sent: its output budget, applied in the field it already uses.

        Returns the rewritten request, or None to leave it unchanged."""
        started, shortened = time.perf_counter(), self.ledger.request_compactions
        view = request_view.from_provider_kwargs(request, api_mode)
        if view is None:
            return None
        view = self.memos.keyed(view)
        if not auxiliary:
            self.move_route(self.route.moved(model=model, base_url=base_url, provider=provider, api_mode=api_mode,
                                             why="request"))
        counted = self.count(view)
        if not auxiliary:
            self.ledger.sent_request(view)
        decision, rewritten = self._budget(request, view, counted)
        if decision.action == "needs_compaction" and not auxiliary and isinstance(request.get("messages"), list):
            shorter = self.request_only_compaction(view, counted, kept=request["messages"])
            if shorter is not None:
                request = {**request, "messages": shorter}
                view = self.memos.keyed(request_view.from_provider_kwargs(request, api_mode) or view)
                counted = self.count(view)
                self.ledger.sent_request(view)
                decision, rewritten = self._budget(request, view, counted)
                rewritten = rewritten if rewritten is not None else request
        self.ledger.decided(decision, auxiliary=auxiliary)
        metrics.request(self, view, counted, decision, auxiliary=auxiliary, seconds=time.perf_counter() - started,
                        shortened=self.ledger.request_compactions > shortened)
        LOGGER.info("baton output budget action=%s prompt=%s source=%s aux=%s", decision.action, counted.tokens,
                    counted.source, auxiliary)
        return rewritten

    def _budget(self, request: dict[str, Any], view: ProviderRequest,
                counted: TokenCount) -> tuple[Decision, dict[str, Any] | None]:
        """``budget.decide`` for the request about to be sent, then the writer (None: leave it unchanged)."""
        settings = get_runtime().settings
        cap = view.cap if view.cap is not None else find_cap(request)
        decision = decide(counted, Limits.of_window(self.effective_window(), settings.min_output_tokens),
                          cap=cap, thinking_budget=find_thinking_budget(request),
                          margins=Margins(fallback=settings.fallback_margin_tokens,
                                          unconfirmed=self.ledger.check.output_margin(counted)))
        if decision.action != "lower_cap_to" or cap is None or decision.value is None:
            return decision, None
        return decision, write_cap(request, cap, decision.value, decision.thinking_budget)

    def request_only_compaction(self, view: ProviderRequest, counted: TokenCount,
                                kept: list[Any]) -> list[Any] | None:
        """This one request, shortened to fit when its prompt alone exceeds the window and Hermes did not compact
        before it (cooldown, stuck, a window learned only now): the most recent whole turns within the window
        less the minimum reply, behind a note. The conversation itself is unchanged: its next compaction is a
        handoff. None when nothing shorter can be built."""
        settings = get_runtime().settings
        measure = self.ledger.measure(counted, view, self.counting())
        system = [m for m in kept if isinstance(m, dict) and m.get("role") == "system"]
        body = [m for m in kept if not (isinstance(m, dict) and m.get("role") == "system")]
        budget = (self.effective_window() - frame_tokens(view, measure) - settings.min_output_tokens
                  - settings.fallback_margin_tokens)
        if budget <= 0:
            return None
        shorter = degrade_messages(body, reason="window_overflow", keep_recent=len(body), max_tokens=budget,
                                   count_tokens=measure.count_messages)
        if shorter == body:
            return None
        self.ledger.request_compactions += 1
        LOGGER.warning("baton shortened one request to fit the window: prompt=%s window=%s kept=%d of %d messages",
                       counted.tokens, self.effective_window(), len(shorter), len(body))
        return system + shorter

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        """An auxiliary call is budgeted against this window only when it goes to this agent's own model."""
        return self.route.serves(model, base_url)

    def on_auxiliary(self, request: dict[str, Any], *, base_url: Any = None) -> dict[str, Any] | None:
        """An auxiliary call (a title, vision, a search summary): budgeted on the route it goes to. To this
        agent's own model it is one of the ledger's requests; to another model it counts with that route's
        tokenizer against that route's window (its tokenizer server's, or its ``tokenizer_routes`` entry's
        ``context_length``) and keeps the unconfirmed room, since no usage of it ever comes back to verify it.
        A route whose window Baton does not know is left alone: a guessed window is no budget.

        Returns the rewritten request, or None to leave it unchanged."""
        model = request.get("model")
        if self.aux_matches_route(model, base_url):
            return self.on_request(request, auxiliary=True)
        view = request_view.from_provider_kwargs(request, None)
        if view is None:
            return None
        counting = get_runtime().for_route(str(model) if model else None, str(base_url) if base_url else None,
                                           settings=self._settings())
        counted = counting.count_chat(view.count_request())
        window = counting.known_window()
        if window is None or counted.tokens is None:
            return None
        settings = get_runtime().settings
        decision, rewritten = apply_output(request, counted, window=window, cap=view.cap,
                                           min_output_tokens=settings.min_output_tokens,
                                           fallback_margin_tokens=settings.fallback_margin_tokens,
                                           unconfirmed_margin=RouteCheck().output_margin(counted))
        self.ledger.decided(decision, auxiliary=True)
        LOGGER.info("baton auxiliary output budget action=%s prompt=%s window=%s source=%s", decision.action,
                    counted.tokens, window, counted.source)
        return rewritten
