"""The line a host shows for an automatic compaction (Hermes 0.22), in Baton's words (numbers and ids, no prompt
text).

Why its own module: a host's default line (Hermes': "Compacting context — summarizing earlier conversation...") is
false for Baton, which writes a validated handoff instead of an LLM summary. The host asks for the line before it
calls ``compress()``, so the line says what is about to happen (the exact size, the trigger, where the compacted
detail stays recallable) and what the previous compaction of this session did (handoff id, tokens before ->
after), the one the user can check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baton_engine.agent.requests import RequestBudgeter
from baton_engine.compaction.cycle import CycleOutcome



@dataclass(frozen=True)
class Compacted:
    """One finished compaction: its handoff's short id (as the handoff block and `baton handoff list` show it;
    None when degraded), sizes, and how many messages it took out."""

    handoff_id: str | None
    before: int | None
    after: int | None
    region_messages: int | None
    degraded: str | None

    @classmethod
    def of(cls, outcome: CycleOutcome, *, before: int | None, after: int | None) -> Compacted:
        scan = outcome.extras.get("scan") or {}
        region = scan.get("region_messages") if isinstance(scan, dict) else None
        stored = outcome.handoff if outcome.validation_status in ("pass", "warn") else None
        handoff_id = (stored or {}).get("short_id") or (stored or {}).get("id")
        return cls(handoff_id=str(handoff_id) if handoff_id else None, before=before, after=after,
                   region_messages=region if isinstance(region, int) else None, degraded=outcome.degraded)

    def describe(self) -> str:
        sizes = f"{_n(self.before)} -> {_n(self.after)} tokens"
        if self.handoff_id is None:
            return f"last compaction degraded ({self.degraded or 'no handoff'}): {sizes}"
        taken = f", {self.region_messages} messages compacted" if self.region_messages else ""
        return f"last handoff {self.handoff_id}: {sizes}{taken}"


def starting(requests: RequestBudgeter, approx_tokens: Any, *, recall: str, previous: Compacted | None) -> str:
    """Baton's line for the compaction the host is starting (``approx_tokens``: the number the host compacts on,
    Baton's own count while its estimators are installed; ``recall``: where the compacted text stays
    recallable; ``previous``: this session's last compaction)."""
    counted = requests.ledger.trigger_count(approx_tokens)
    tokens = counted.tokens if counted is not None else approx_tokens
    exact = " exact" if counted is not None and counted.exact else ""
    line = (f"Baton handoff at {_n(tokens)}{exact} tokens (trigger {_n(requests.limits().trigger)}): earlier turns "
            f"become a validated handoff, their full text recallable with baton_recall ({recall})")
    return f"{line}; {previous.describe()}" if previous is not None else line


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"
