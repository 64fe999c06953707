"""One agent's request side: every provider request counted once in its agent's view, budgeted by the core.

Why a collaborator of its own: a host's engine adapts two surfaces, its context-engine lifecycle (Hermes:
``hermes/engine.py``) and the requests of its agent loop (``RequestBudgeter``: reported usage, the estimators' and
the middleware's counts, the window, the output budget). It owns this agent's ``route``, ``ledger`` and
``memos`` as plain data, so Hermes' per-agent ``copy.deepcopy`` copies it whole (the memos start empty). What is
the host's (the shape of an API mode, how its stored messages read as the neutral view, the name of its window) it
asks its ``Host`` (``agent/host.py``; Hermes':
``hermes/host.HermesHost``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from baton_engine import policy
from baton_engine.agent import metrics
from baton_engine.agent.host import Host
from baton_engine.agent.ledger import Ledger, Route, RouteLedgers, frame_tokens
from baton_engine.agent.memos import AgentMemos
from baton_engine.agent.notices import Notices
from baton_engine.agent.project import Project, Resolved
from baton_engine.agent.runtime import DEFAULT_CONTEXT_LENGTH, RouteCounting, get_runtime
from baton_engine.budget import Decision, Margins, decide
from baton_engine.compaction import scan
from baton_engine.compaction.shortening import shorten
from baton_engine.metrics.log import MetricsLog
from baton_engine.prompt_cache import CacheBook
from baton_engine.request import ProviderRequest
from baton_engine.shapes import Conversation, Shape
from baton_engine.shapes.cap import budget_output, write_decision
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.media import MediaRule, rule_of
from baton_engine.tokens.server_window import OLLAMA_FIX, ServedWindow, server_window
from baton_engine.tokens.verify import below, truncated

if TYPE_CHECKING:
    from baton_engine.refusal import Refusal

LOGGER = logging.getLogger("baton_engine.agent")


class AgentWindow:
    """The numbers Hermes reads and sets on the engine by name (``context_length``, ``threshold_percent``,
    ``threshold_tokens``), held here so the budgeter and the engine read one copy."""

    def __init__(self, threshold_percent: float) -> None:
        self.threshold_percent = threshold_percent
        self.context_length = DEFAULT_CONTEXT_LENGTH
        self.threshold_tokens = self.threshold_for(DEFAULT_CONTEXT_LENGTH)

    def threshold_for(self, length: int) -> int:
        try:
            return get_runtime().threshold_for(length, self.threshold_percent)
        except ValueError:
            return int(length * self.threshold_percent)

    def set(self, length: int) -> None:
        """Hermes' context length (``update_model``): the threshold follows it, reserving the output budget."""
        self.context_length = length
        self.threshold_tokens = self.threshold_for(length)

    def fit(self, window: int) -> None:
        """The route's real window is ``window``: a smaller one lowers the threshold to fit it (only ever lowers:
        Hermes may have lowered it too)."""
        if window < self.context_length:
            self.threshold_tokens = min(self.threshold_tokens, self.threshold_for(window))


class ScanAhead:
    """How far the current message list was scanned ahead for the next compaction (``scan.observe``); the
    budgeter scans what a request adds, the compaction starts a new list."""

    def __init__(self) -> None:
        self.upto = 0

    def observe(self, messages: Any) -> None:
        """Scan the messages this request added (each once, remembered by content), so a compaction reads
        only what never reached a request."""
        if isinstance(messages, list):
            self.upto = scan.observe(messages, self.upto)


class AuxiliaryCall(NamedTuple):
    """An auxiliary call as budgeted: the request rewritten (None: unchanged) and the ledger its reply verifies (None:
    not counted)."""

    request: dict[str, Any] | None
    ledger: Ledger | None


class RequestBudgeter:
    """One agent's requests: its route (and the tokenizer that fits it), one count per request view in its
    ledger, the window it budgets against, and ``budget.decide`` on each request about to be sent."""

    def __init__(self, host: Host, window: AgentWindow, project: Project, scan_ahead: ScanAhead) -> None:
        self.host = host
        self.window = window
        self.project = project
        self.scan_ahead = scan_ahead
        self.route = Route()
        self.ledger = Ledger()
        self.left = RouteLedgers()  # the ledgers of the routes this agent left, for a switch back
        self.memos = AgentMemos(host.project)  # this agent's per-message memos (a copy starts empty)
        self.metrics = MetricsLog()  # this session's metrics log (silent until a session starts in a project)
        self.notices = Notices()  # what this agent's user was told on the terminal, once each (status lists them)
        self.cache = CacheBook()  # this session's prompts as the provider read them, and what reclamation took out
        self._counting: Resolved[RouteCounting] = Resolved()  # for this route and settings

    def counting(self) -> RouteCounting:
        """This agent's route's counting: the tokenizer that fits its model under this session's project
        settings (``BatonRuntime.for_route``; a gateway session's project may name its own tokenizer), resolved
        once for them."""
        route, runtime, settings = self.route, get_runtime(), self.project.settings()
        return self._counting.get((runtime, route.key(), settings),
                                  lambda: runtime.for_route(route.model, route.base_url, route.provider, settings))

    def move_route(self, route: Route) -> None:
        """The agent's requests now go to ``route``: another model or server takes up that route's ledger (its
        counts, anchor, verdict, frame and learned window; a fresh one for a route not kept) and keeps this one
        for a switch back (``RouteLedgers``, at most ``route_states`` routes)."""
        if self.route.differs_from(route):
            self.ledger = self.left.switch(self.ledger, self.route, route, self.project.settings().route_states)
            LOGGER.info("baton route moved by=%s; state of the new route %s", route.changed_by,
                        "found" if self.ledger.sent_requests else "starts over")
        self.route = route
        self.fit_window()

    def set_context_length(self, length: int) -> None:
        """Hermes' context length for this route (``update_model``): the window and threshold follow."""
        self.window.set(length)
        self.fit_window()

    def learn_window(self, window: int) -> None:
        """A provider stated its real window (a refusal): this route budgets against it from now on."""
        learned = self.ledger.learned_window
        self.ledger.learned_window = window if learned is None else min(learned, window)
        self.fit_window()

    def fit_window(self, counting: RouteCounting | None = None) -> None:
        """The threshold fits the window this route budgets against, once something may have changed it (Hermes'
        context length, a refusal, the route, a tokenizer server's ``max_model_len`` known after a count); a
        window smaller than the host's is said on the terminal once."""
        window, source = self.window_source(counting)
        self.window.fit(window)
        configured = self.window.context_length
        if window < configured:
            self.notices.say(f"window {self.route.base_url} {window}",
                             f"the {self.host.window_label} {configured:,} is larger than the window the server has "
                             f"({window:,}, {source}); Baton budgets against {window:,}. Set "
                             f"{self.host.window_setting} to {window} (`baton doctor` compares them)")

    def window_source(self, counting: RouteCounting | None = None) -> tuple[int, str]:
        """``(window, where it comes from)``: the smallest of Hermes' context_length, the serving model's
        max_model_len and a window a refusal stated."""
        candidates = []  # on a tie the provider's own statement names the source (Hermes may copy its number)
        if self.ledger.learned_window is not None:
            candidates.append((self.ledger.learned_window, "provider refusal"))
        if self.ledger.served is not None:
            candidates.append((self.ledger.served.tokens, self.ledger.served.said_by))
        server = (counting or self.counting()).server_window()
        if server is not None:
            candidates.append((server, "server max_model_len"))
        candidates.append((self.window.context_length, self.host.window_label))
        return min(candidates, key=lambda item: item[0])

    def effective_window(self) -> int:
        """The window this route budgets against (``window_source``)."""
        return self.window_source()[0]

    def limits(self, tokens: int | None = None) -> policy.Limits:
        """The limits a decision uses; the floor is counted (once per frame) only when it can matter: for a
        request of ``tokens`` at or above the configured trigger, or when no size is given (compress, status)."""
        settings = self.project.settings()
        limits = policy.Limits.clamped(self.effective_window(), threshold=self.window.threshold_tokens,
                                       min_output_tokens=settings.min_output_tokens,
                                       fallback_margin_tokens=settings.fallback_margin_tokens,
                                       fallback_threshold=settings.fallback_token_threshold)
        if tokens is None or tokens >= limits.configured_trigger:
            limits = replace(limits, floor=self.ledger.trigger_floor(self.counting(), settings.fresh_tail_tokens))
        return limits

    def warn_raised(self, limits: policy.Limits) -> None:
        """A decision made at a trigger raised to the floor: said once per raised value (what to set instead)."""
        if limits.raised and self.ledger.floor_warned != limits.trigger:
            self.ledger.floor_warned = limits.trigger
            LOGGER.warning("baton trigger %d is below the smallest workable trigger for this request's fixed part "
                           "(system prompt + tool schemas: %s tokens); compacting at %d instead. Set "
                           "baton.fallback_token_threshold to at least %d (docs/compaction.md)",
                           limits.configured_trigger, self.ledger.fixed[1] if self.ledger.fixed else "?",
                           limits.trigger, limits.trigger)

    def observe_reported(self, prompt_tokens: int, output_tokens: int | None = None, *, cached: int | None = None,
                         written: int = 0) -> None:
        """The provider's size of the last request sent: the anchor, and the check of this route's counts;
        said once (the terminal, then status and doctor) when it shows the counts are off, or that the server
        cut the prompt to a smaller window (``cut_by``): then no calibration, the server's window from now on.
        ``cached`` / ``written``: the part of the prompt read from / written to the provider's cache (None: the
        route does not say), into the session's cache account."""
        self.cache.observe(prompt_tokens, cached, written)
        served = self.cut_by(prompt_tokens)
        if served is not None:
            counted = self.ledger.sent_count.tokens if self.ledger.sent_count is not None else "?"
            self.ledger.observe_truncation(prompt_tokens, served)
            metrics.reported(self, prompt_tokens, flipped=False, output_tokens=output_tokens, cached=cached,
                             written=written)
            self.fit_window()
            fix = OLLAMA_FIX if served.ollama else "raise the server's window"
            self.notices.say(f"truncated {self.route.base_url} {self.route.model}",
                             f"the server cut the prompt to its window without an error: Baton counted {counted:,} "
                             f"tokens, the server reported {prompt_tokens:,} and serves {served.tokens:,} "
                             f"({served.said_by}), so the model did not see the whole conversation. This is no "
                             f"tokenizer error (counts are not calibrated down); Baton budgets against "
                             f"{served.tokens:,} from now on. To use a larger window, {fix}; then set "
                             f"{self.host.window_setting} to it")
            return
        flipped = self.ledger.observe_usage(prompt_tokens)
        metrics.reported(self, prompt_tokens, flipped=flipped, output_tokens=output_tokens, cached=cached,
                         written=written)
        if flipped:
            check, source = self.ledger.check, self.counting().source()
            self.notices.say(f"calibrated {self.route.base_url} {self.route.model}",
                             f"counts disagree with the provider (counted {check.last.counted if check.last else '?'}"
                             f", reported {prompt_tokens}, ratio {check.ratio:.3f}, tokenizer {source}): the route is "
                             f"calibrated, budgets use the provider's scale. {check.status(source)['advice'] or ''}"
                             .rstrip())

    def cut_by(self, prompt_tokens: int) -> ServedWindow | None:
        """The window the server cut the last request to, when its reported size lies below Baton's count and the
        count is above a window the server states (``verify.truncated``): a refusal's or its tokenizer server's,
        else the server asked once per route (``server_window``: vLLM, llama.cpp, Ollama's /api/ps). None for an
        ordinary report (or a repeated one)."""
        ledger = self.ledger
        if ledger.sent is None or ledger.usage_observed() or not below(ledger.sent_count, prompt_tokens):
            return None
        known = [ServedWindow(window, source) for window, source in [self.window_source()]
                 if source != self.host.window_label]
        if not ledger.served_asked and self.route.base_url:
            ledger.served_asked = True
            ledger.served = server_window(self.route.base_url, self.route.model,
                                          self.project.settings().tokenizer.timeout_seconds)
        if ledger.served is not None:
            known.append(ledger.served)
        return next((served for served in known if truncated(ledger.sent_count, prompt_tokens, served.tokens)), None)

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

    # ---- counting: one request view, one count ----------------------------------------------------

    def media_rule(self) -> MediaRule:
        """Whose published rule prices this route's images (Anthropic's, OpenAI's, else the larger of both)."""
        route = self.route
        return rule_of(provider=route.provider, base_url=route.base_url, model=route.model, api_mode=route.api_mode)

    def count(self, view: ProviderRequest, *, ledger: Ledger | None = None) -> TokenCount:
        """The view's provider-visible size: exact, anchored on real usage, or rough + margin. A tokenizer
        server states its window with a count: the threshold fits it from here on. ``ledger``: an auxiliary
        request's own (``on_auxiliary``), else the agent's."""
        counting = self.counting()
        ledger = ledger if ledger is not None else self.ledger
        counted = ledger.count(view, counting, by_content=self.host.wire_is_not_chat(self.route.api_mode),
                               media_rule=self.media_rule())
        self.fit_window(counting)
        return counted

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        """An estimator's arguments, counted as the request the transport will send (shares its count); the host
        then has the messages it added scanned ahead (``Agent.prepare_compaction``)."""
        return self.count(self.memos.estimate(messages, system_prompt=system_prompt, tools=tools,
                                              frame=self.ledger.frame))

    def view_of(self, messages: Any) -> ProviderRequest:
        """A transcript (as ``compress`` gets it, without the system prompt) inside this agent's frame, keyed
        through the agent's memos."""
        frame = self.ledger.frame
        body = self.memos.estimate(messages, frame=frame)
        return self.memos.keyed(frame.with_conversation(body.messages)) if frame is not None else body

    def on_request(self, request: dict[str, Any], *, api_mode: Any = None, model: Any = None, base_url: Any = None,
                   provider: Any = None, auxiliary: Ledger | None = None) -> dict[str, Any] | None:
        """A provider request about to be sent: its output budget, applied in the field it already uses, and when its
        prompt alone does not fit, the request shortened to fit (``request_only_compaction``). ``auxiliary``: an
        auxiliary call to this agent's own model, counted and sent in that ledger of its own (``on_auxiliary``).

        Returns the rewritten request, or None to leave it unchanged."""
        started, shortened = time.perf_counter(), self.ledger.request_compactions
        if auxiliary is None:
            self.project.next_request()
        shape = self.host.shape_for(api_mode)
        view = shape.read(request)
        if view is None:
            return None
        view = self.memos.keyed(view)
        if auxiliary is None:
            self.move_route(self.route.moved(model=model, base_url=base_url, provider=provider, api_mode=api_mode,
                                             why="request"))
        counted = self.count(view, ledger=auxiliary)
        (auxiliary or self.ledger).sent_request(view, auxiliary=auxiliary is not None)  # the decision's floor reads it
        decision = self.decide(view, counted)
        conversation = shape.conversation(request) if decision.compact and auxiliary is None else None
        shorter = self.request_only_compaction(shape, conversation, view, counted, decision) if conversation else None
        if shorter is not None:
            items, view = shorter
            request = shape.write(request, conversation, items)  # type: ignore[arg-type]
            view = self.memos.keyed(view)
            counted = self.count(view)
            self.ledger.sent_request(view, instead=True)
            decision = self.decide(view, counted)
        rewritten = write_decision(request, view.cap, decision)
        if shorter is not None and rewritten is None:
            rewritten = request
        self.ledger.decided(decision, auxiliary=auxiliary is not None)
        if auxiliary is None and counted.tokens is not None:
            self.cache.sized(counted.tokens)
        metrics.request(self, view, counted, decision, auxiliary=auxiliary is not None,
                        seconds=time.perf_counter() - started, shortened=self.ledger.request_compactions > shortened)
        LOGGER.info("baton output budget action=%s prompt=%s source=%s aux=%s", decision.action, counted.tokens,
                    counted.source, auxiliary is not None)
        return rewritten

    def decide(self, view: ProviderRequest, counted: TokenCount) -> Decision:
        """``budget.decide`` for the request about to be sent, on the numbers its shape read (its cap and thinking
        budget): the cap, or whether and how far to shorten it."""
        limits = self.limits(counted.tokens)
        return decide(counted, limits, cap=view.cap, thinking_budget=view.thinking_budget,
                      margins=Margins.of(limits, self.unconfirmed_margin(counted)))

    def unconfirmed_margin(self, counted: TokenCount) -> int:
        """The room an output cap keeps for a count its provider has not confirmed (``RouteCheck.output_margin``);
        none when the route's own server counted it: its /tokenize is the provider's count, and a ``/model`` to a
        server that counts for itself would otherwise send its first, largest request with the smallest cap."""
        if self.counting().counts_on(self.route.base_url):
            return 0
        return self.ledger.check.output_margin(counted)

    def request_only_compaction(self, shape: Shape, conversation: Conversation, view: ProviderRequest,
                                counted: TokenCount, decision: Decision) -> tuple[list[Any], ProviderRequest] | None:
        """This one request, shortened to fit when its prompt alone exceeds the window and Hermes did not compact
        before it (cooldown, stuck, a window learned only now): the most recent whole units of its ``conversation``
        (as its shape's adapter groups them) within ``decision.prompt_room`` (the window less the reply room:
        ``budget.decide``) less the frame, behind a note in the shape's own form. The conversation itself is
        unchanged: its next compaction is a handoff. Returns the items the shape writes in place of the units, and
        the shortened view (the units' own chat messages: the request is not read again); None when nothing
        shorter can be built."""
        if decision.prompt_room is None:
            return None
        measure = self.ledger.measure(counted, view, self.counting())
        budget = decision.prompt_room - frame_tokens(view, measure)
        if budget <= 0:
            return None
        shorter = shorten(conversation, reason="window_overflow", max_tokens=budget,
                          count_tokens=measure.count_messages)
        if shorter is None:
            return None
        head = [shape.text_item(message["role"], message["content"]) for message in shorter.head]
        self.ledger.request_compactions += 1
        LOGGER.warning("baton shortened one request to fit the window: prompt=%s window=%s kept=%d of %d units",
                       counted.tokens, self.effective_window(), len(shorter.units), len(conversation.units))
        return ([*head, *(item for unit in shorter.units for item in unit.items)],
                replace(view, messages=(*conversation.leading.chat, *shorter.chat()), digests=None))

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        """An auxiliary call is budgeted against this window only when it goes to this agent's own model."""
        return self.route.serves(model, base_url)

    def on_auxiliary(self, request: dict[str, Any], *, base_url: Any = None) -> AuxiliaryCall:
        """An auxiliary call (a title, vision, a search summary): budgeted on the route it goes to, and counted in a
        ledger its reply verifies (``observe_auxiliary``), never the main request's memo or anchor (the main
        request's usage is verified against them). To this agent's own model it counts on the route's scale, in a
        ledger of its own that shares the route's check. To another model it counts in THAT route's ledger, kept
        with the agent's other routes (``RouteLedgers``, ``route_states``), with that route's tokenizer against that
        route's window (its tokenizer server's, or its ``tokenizer_routes`` entry's ``context_length``), and keeps
        the unconfirmed room until that route's own replies confirm its counts. A route whose window Baton does not
        know is counted (its reply still verifies it) but left alone: a guessed window is no budget."""
        model = request.get("model")
        if self.aux_matches_route(model, base_url):
            own = Ledger(frame=self.ledger.frame, check=self.ledger.check)
            return AuxiliaryCall(self.on_request(request, auxiliary=own), own)
        view = self.host.shape_for(None).read(request)  # an auxiliary call is built in the host's default shape
        if view is None:
            return AuxiliaryCall(None, None)
        route = Route().moved(model=model, base_url=base_url, why="auxiliary")
        settings = self.project.settings()
        counting = get_runtime().for_route(route.model, route.base_url, settings=settings)
        ledger = self.left.auxiliary(route, settings.route_states)
        counted = ledger.count(view, counting, media_rule=rule_of(model=route.model, base_url=route.base_url))
        ledger.sent_request(view, auxiliary=True)
        window = counting.known_window()
        if window is None or counted.tokens is None:
            return AuxiliaryCall(None, ledger)
        limits = policy.Limits.of_window(window, settings.min_output_tokens, settings.fallback_margin_tokens)
        decision, rewritten = budget_output(request, view, counted, limits,
                                            unconfirmed_margin=0 if counting.counts_on(base_url)
                                            else ledger.check.output_margin(counted))
        self.ledger.decided(decision, auxiliary=True)
        LOGGER.info("baton auxiliary output budget action=%s prompt=%s window=%s source=%s", decision.action,
                    counted.tokens, window, counted.source)
        return AuxiliaryCall(rewritten, ledger)

    def observe_auxiliary(self, ledger: Ledger, prompt_tokens: int) -> None:
        """An auxiliary call's reported size (0 = none), for the request ``on_auxiliary`` counted in ``ledger``: the
        anchor and the check of the route it went to, once, when plausible (``Ledger.observe_usage``)."""
        if ledger.observe_usage(prompt_tokens):
            LOGGER.info("baton auxiliary route calibrated ratio=%.3f after=%d responses", ledger.check.ratio,
                        ledger.check.requests_seen)
