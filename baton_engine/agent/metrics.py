"""What the engine writes to its session's metrics log (``baton_engine.metrics.log``): the numbers of one
request, response, refusal or compaction, read off the request budgeter (``agent/requests``). Never prompt
text: counts, decisions, sources, ids and timings only.

Why a module of its own: the engine's hooks stay one line each (other work edits those files), and every
field the report shows is chosen here, once. A failed write is dropped by the log itself (``MetricsLog``: the agent
goes on without that line); a bug in a field raises to the host's boundary, like any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton_engine import __version__
from baton_engine.metrics.log import MetricsLog, Retention
from baton_engine.tokens.counter import counting_mode

if TYPE_CHECKING:
    from baton_engine.budget import Decision
    from baton_engine.compaction.cycle import CycleOutcome
    from baton_engine.refusal import Refusal
    from baton_engine.request import ProviderRequest
    from baton_engine.tokens.contract import TokenCount


def start(requests: Any, session_id: str | None, *, owner: dict[str, Any] | None, adapter: str) -> MetricsLog:
    """A new session's log (a rotation at compaction keeps the old one); a silent log outside a project."""
    window, source = requests.window_source()
    header = {"owner": owner, "model": requests.route.model, "window": window,
              "window_source": source, "baton_version": __version__, "adapter": adapter}
    settings = requests.project.settings()
    retention = Retention(settings.metrics_max_age_days, settings.metrics_max_total_mb,
                          settings.metrics_live_hours)
    return MetricsLog.start(Path(requests.project.path()), session_id=session_id, header=header,
                            retention=retention)


def request(requests: Any, view: ProviderRequest, counted: TokenCount, decision: Decision, *,
            auxiliary: bool, shortened: bool, seconds: float) -> None:
    """One budgeted provider request: Baton's count and how it was made, the window, the cap asked and sent, the
    model it goes to (an auxiliary one's own; the provider only for the agent's route)."""
    window, source = requests.window_source()
    asked = view.cap.value if view.cap is not None else None
    sent = decision.value if decision.action == "lower_cap_to" else asked
    route = requests.route
    requests.metrics.emit("aux_request" if auxiliary else "request", prompt=counted.tokens,
                          mode=counting_mode(counted), source=counted.source, fallback=counted.fallback_reason,
                          window=window, window_source=source, cap_asked=asked, cap_sent=sent,
                          action=decision.action, short=decision.short, shortened=shortened,
                          breaker=_breaker(requests), ms=round(seconds * 1000, 2),
                          model=view.model or (None if auxiliary else route.model),
                          provider=None if auxiliary else route.provider)


def reported(requests: Any, prompt_tokens: int, *, flipped: bool, output_tokens: int | None = None,
             cached: int | None = None, written: int = 0) -> None:
    """The provider's size of the last request sent (and of its reply, when given), the part of it read from the
    provider's cache (None: the route does not say) and written to it, and the route's verdict after it (``baton
    doctor`` reads the latest ``route_check``)."""
    if prompt_tokens <= 0:
        return
    check = requests.ledger.check.status(requests.counting().source())
    requests.metrics.emit("usage", request=requests.metrics.seq.get("request", 0), reported=prompt_tokens,
                          output=output_tokens or None, flipped=flipped, route_check=check, cache_read=cached,
                          cache_write=written or None,
                          uncached=prompt_tokens - min(cached, prompt_tokens) if cached is not None else None)


def tools(requests: Any, figure: dict[str, Any]) -> None:
    """What Baton's tool schemas add to every request (``offered``, ``schema_tokens``, ``counted_by``), as the
    status just measured it: no count of its own (the request-count budget stays as it is); logged when it
    first appears in a log and when it changes."""
    if figure.get("schema_tokens") is not None:
        requests.metrics.emit_changed("tools", **figure)


def refusal(requests: Any, refused: Refusal) -> None:
    requests.metrics.emit("refusal", request=requests.metrics.seq.get("request", 0), kind=refused.kind,
                          window=refused.window, prompt=refused.prompt_tokens)


def compaction(requests: Any, outcome: CycleOutcome, before: TokenCount, after: TokenCount, *,
               seconds: float) -> None:
    """One compaction: the request size before and after, what it kept, stubbed and made recallable, its
    handoff (id, validation) or why it degraded."""
    handoff = outcome.handoff or {}
    extras = outcome.extras
    requests.metrics.emit("compaction", request=requests.metrics.seq.get("request", 0), before=before.tokens,
                          after=after.tokens, mode=counting_mode(before), kept=outcome.tail_messages,
                          stubbed=extras.get("stubbed"), recallable=extras.get("recallable"),
                          compacted=(extras.get("scan") or {}).get("region_messages"),
                          handoff=handoff.get("id"), short_id=handoff.get("short_id"),
                          status=handoff.get("status"), validation=outcome.validation_status,
                          degraded=outcome.degraded, brief_tokens=outcome.brief_tokens,
                          ms=round(seconds * 1000, 2))


def prune(requests: Any, *, committed: bool, reason: str, figures: dict[str, Any]) -> None:
    """A prune committed (what it took out, exact or not, the first changed message) or declined, and why."""
    requests.metrics.emit("prune", request=requests.metrics.seq.get("request", 0), committed=committed,
                          reason=reason, before=figures.get("before"), after=figures.get("after"),
                          reclaimed=figures.get("reclaimed"), exact=figures.get("exact"),
                          messages=sum((figures.get("pruned") or {}).values()) or None,
                          first_changed=figures.get("first_changed"), net=figures.get("net"))


def _breaker(requests: Any) -> str | None:
    counter = requests.counting().counter()
    return counter.breaker_state().state if counter is not None else None

