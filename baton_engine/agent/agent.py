"""``Agent``: one agent's Baton whole, its collaborators built around its host, and what a host's context-engine
hooks ask of them, in Baton's terms.

Why a class of its own: a host's engine (Hermes: ``hermes/engine.BatonContextEngine``) turns its hooks' names,
arguments, fallbacks and latches into calls here; what those hooks decide (compact now? the compaction, a
session's start and end, a response's usage, status) has no host in it, so it reads and tests without one. The
host's engine is an ``Agent`` (its first base): the collaborators and the window the host reads by name are plain
data on it, so a per-agent copy (Hermes 0.19 deep-copies its engine) takes them whole.
"""

from __future__ import annotations

import os
from typing import Any

from baton_engine import budget, policy
from baton_engine.agent import status
from baton_engine.agent.compactions import CompactionRunner, Compression
from baton_engine.agent.host import Host
from baton_engine.agent.ledger import Ledger, Route
from baton_engine.agent.project import Project
from baton_engine.agent.pruner import Pruner
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import AgentWindow, AuxiliaryCall, RequestBudgeter, ScanAhead
from baton_engine.agent.runtime import RouteCounting, get_runtime
from baton_engine.agent.tool_handler import ToolHandler
from baton_engine.refusal import Refusal
from baton_engine.request import ProviderRequest
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.verify import cached_prompt_tokens, reported_prompt_tokens, usage_value


class Agent:
    """One agent's Baton: ``project`` (which project, its settings), ``window`` (the context length and threshold,
    read and set by name below), ``requests`` (the request budgeter: route, ledger, memos, counting,
    ``budget.decide`` on each request), ``scan_ahead`` (the messages already scanned for the next compaction),
    ``recall_binding`` (where ``baton_recall`` reads), ``compaction`` (when to compact, the cycle, the session's
    lineage and draft), ``tool_handler`` (the tools' host) and ``pruner`` (the host's prune hook)."""

    def __init__(self, host: Host, project_dir: str | os.PathLike[str] | None, *, threshold_percent: float,
                 adapter_version: str) -> None:
        self.project = Project(host, project_dir)
        self.window = AgentWindow(threshold_percent)
        self.scan_ahead = ScanAhead()
        self.requests = RequestBudgeter(host, self.window, self.project, self.scan_ahead)
        self.recall_binding = RecallBinding(self.requests)
        self.compaction = CompactionRunner(self.requests, self.recall_binding, self.project, self.scan_ahead,
                                           adapter_version=adapter_version)
        self.tool_handler = ToolHandler(self.compaction, self.requests, self.recall_binding)
        self.pruner = Pruner(self.requests, self.compaction, self.recall_binding)

    # ---- what a host reads and sets by name, held by the collaborators ------------------------------------

    @property
    def context_length(self) -> int:
        return self.window.context_length

    @context_length.setter
    def context_length(self, value: int) -> None:
        self.window.context_length = value

    @property
    def threshold_tokens(self) -> int:
        return self.window.threshold_tokens

    @threshold_tokens.setter
    def threshold_tokens(self, value: int) -> None:
        self.window.threshold_tokens = value

    @property
    def threshold_percent(self) -> float:
        return self.window.threshold_percent

    @threshold_percent.setter
    def threshold_percent(self, value: float) -> None:
        self.window.threshold_percent = value

    @property
    def compression_count(self) -> int:
        return self.compaction.compression_count

    @compression_count.setter
    def compression_count(self, value: int) -> None:
        self.compaction.compression_count = value

    @property
    def route(self) -> Route:
        return self.requests.route

    @route.setter
    def route(self, value: Route) -> None:
        self.requests.route = value

    # ---- the request side (``requests``) -----------------------------------------------------------

    def counting(self) -> RouteCounting:
        return self.requests.counting()

    def limits(self, tokens: int | None = None) -> policy.Limits:
        return self.requests.limits(tokens)

    def count(self, view: ProviderRequest) -> TokenCount:
        return self.requests.count(view)

    def count_estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None) -> TokenCount:
        return self.requests.count_estimate(messages, system_prompt=system_prompt, tools=tools)

    def on_request(self, request: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
        return self.requests.on_request(request, **kwargs)

    def on_auxiliary(self, request: dict[str, Any], *, base_url: Any = None) -> AuxiliaryCall:
        return self.requests.on_auxiliary(request, base_url=base_url)

    def observe_auxiliary_usage(self, ledger: Ledger, usage: dict[str, Any]) -> None:
        """An auxiliary reply's usage, for the request ``on_auxiliary`` counted in ``ledger`` (its route's)."""
        self.requests.observe_auxiliary(ledger, reported_prompt_tokens(usage))

    def aux_matches_route(self, model: Any, base_url: Any) -> bool:
        return self.requests.aux_matches_route(model, base_url)

    def observe_refusal(self, refusal: Refusal) -> None:
        self.requests.observe_refusal(refusal)

    def observe_response(self, usage: dict[str, Any]) -> None:
        """One response of the agent's own loop (Hermes: ``update_from_response``): a turn for the detector's turn
        budget, and its usage (``observe_response_usage``)."""
        self.compaction.turns += 1
        self.observe_response_usage(usage)

    def observe_response_usage(self, usage: dict[str, Any]) -> None:
        """The provider's usage of the last request sent, from whichever host path delivers it first (Hermes: the
        ``llm_execution`` middleware, ``update_from_response``, ``on_turn_complete``): observed once per request,
        so a response that reaches several of them is counted once."""
        if not self.requests.ledger.usage_observed():
            self.requests.observe_reported(
                reported_prompt_tokens(usage), usage_value(usage, "completion_tokens", "output_tokens"),
                cached=cached_prompt_tokens(usage),
                written=usage_value(usage, "cache_creation_input_tokens", "cache_write_tokens"))

    def prepare_compaction(self, messages: Any) -> None:
        """Scan the messages this request added ahead for the next compaction (``ScanAhead``); never raises."""
        self.scan_ahead.observe(messages)

    # ---- when to compact, and the compaction (``compaction``) ------------------------------------------------

    def compaction_decision(self, tokens: int, *, awaiting_usage: bool) -> budget.Decision:
        """Compact a request of ``tokens`` now? Its reason is ``last_decision`` (status)."""
        decision = self.compaction.decide(tokens, awaiting_usage=awaiting_usage)
        self.compaction.last_decision = decision.reason
        return decision

    def compacts_before_sending(self, messages: Any, *, awaiting_usage: bool) -> bool:
        """Whether the request these messages make is compacted before it is sent: its exact count (a count already
        made for the request is reused) by the same decision, so what fits is never compacted."""
        if not isinstance(messages, list) or not messages:
            return False
        counted = self.requests.count(self.requests.view_of(messages))
        if counted.tokens is None:
            return False
        return self.compaction.decide(counted.tokens, awaiting_usage=awaiting_usage).compact

    def compact(self, messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None,
                force: bool) -> Compression:
        """One Baton handoff cycle; a failure is said by status (``internal_error``) and raises on to the host's
        boundary, whose fallback is ``compact_degraded``."""
        try:
            return self.compaction.compress(messages, current_tokens, focus_topic, force)
        except Exception as exc:
            self.compaction.failed(type(exc).__name__)
            raise

    def compact_degraded(self, messages: list[dict[str, Any]], current_tokens: int | None = None) -> Compression:
        """What the host's boundary answers when ``compact`` raised: the recent messages, pair-safe, recorded as an
        internal error and cooled down (``CompactionRunner.degraded``)."""
        return self.compaction.degraded(messages, current_tokens)

    # ---- the session ------------------------------------------------------------------------------------

    def session_started(self, session_id: str, *, model: Any, rotated: bool, platform: Any,
                        conversation_id: Any) -> None:
        """A rotation at compaction (``rotated``) keeps every bit of state; any other start (a new agent, ``/new``,
        ``/resume``) is a session of its own, with its owner and its own lineage (``CompactionRunner.start``)."""
        if model:
            self.requests.move_route(self.route.moved(model=str(model), why="session start"))
        if rotated:
            self.compaction.rotated(session_id)
        else:
            self.pruner.new_session()
            self.compaction.start(session_id, platform=platform, conversation_id=conversation_id)
        get_runtime().engines.remember(self.compaction.session_id, self)

    def session_reset(self) -> None:
        """``/new`` or ``/reset``: per-session detector, policy and prune state; the lineage stays until the next
        session start says whose session follows."""
        self.pruner.new_session()
        self.compaction.reset()

    def session_bound(self, session_store: Any, session_id: str | None) -> None:
        """The host's session store (or None; recall then reads it) and the session id."""
        self.recall_binding.bind(session_store)
        if session_id:
            self.compaction.session_id = session_id

    def status(self) -> dict[str, Any]:
        """What this agent's Baton says of itself (``agent/status``) and its prunes."""
        return {**status.engine_status(self.requests, self.compaction, self.recall_binding),
                "reclaim": self.pruner.status()}
