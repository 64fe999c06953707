"""What a compaction keeps within reach: the region is remembered for ``baton_recall``, and its anchors and
the user's own words go into the record (``continuity``) and the brief.

Why its own step of the cycle: the cycle is host-neutral, so the host passes recall as plain callables
(``Recall``): where the compacted region is remembered (Baton's in-process index; nothing when the host's
own session store already keeps it) and what earlier compactions of this lineage took out (so from the
second compaction on, the user's words come from the whole lineage, not only the newest region).

Brief budget ``B`` (``brief_max_tokens``): the recall line always; the handoff brief (objective, state and
every captured decision / evidence / failed attempt / open item) first, then, in what it leaves, the
user's words up to ``USER_WORDS_SHARE`` of B and anchors up to ``ANCHORS_SHARE`` of B (``fitted``): what
the model recorded on purpose is never pushed out by what Baton extracted. The record keeps the whole
selection; the brief drops, when tight, anchors first (their own order: recurring ids, searches, files
read, commands, error lines, files written), then the user's words from the oldest (all of them stay in
the record and are one ``baton_recall`` away).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from baton_engine.compaction.anchors import Anchors, extract_anchors
from baton_engine.compaction.user_words import UserWords, collect_user_words
from baton_engine.handoff.render import MIN_MAX_TOKENS
from baton_engine.recall.entry import Entry, ref_for

USER_WORDS_SHARE = 0.35
ANCHORS_SHARE = 0.25
HEADING = "## Compacted detail"
RECALL_LINE = ("Earlier tool results, files, commands and user messages of this conversation were compacted out "
               "of the context; each is one `baton_recall` call away (mode=search with an identifier, path or "
               "\"quoted phrase\"; then mode=expand with a hit's ref).")
ANCHORS_HEADER = "Anchors of the compacted part (verbatim):"

Message = dict[str, Any]
CountText = Callable[[str], int]


@dataclass(frozen=True)
class Recall:
    """The host's recall, as callables: ``remember`` the compacted region (None: the host's store keeps it),
    ``lineage`` the entries this lineage's compactions took out so far."""

    remember: Callable[[list[Message]], object] | None
    lineage: Callable[[], Sequence[Entry]]


@dataclass(frozen=True)
class Continuity:
    anchors: Anchors
    words: UserWords
    text: str  # the brief's section, within its budget
    tokens: int
    lines: tuple[str, ...] = ()  # the section's lines in keep order (heading and recall line first)

    def fitted(self, budget: int, count_text: CountText) -> tuple[str, int]:
        """The section within ``budget`` tokens: heading and recall line always, then as many of the user's
        words (newest first, as selected) and anchors as fit, dropping from the end."""
        kept = list(self.lines)
        text = "\n".join(kept)
        tokens = count_text(text)
        while len(kept) > 2 and tokens > budget:
            kept.pop()
            if kept[-1] == ANCHORS_HEADER:
                kept.pop()
            text = "\n".join(kept)
            tokens = count_text(text)
        return text, tokens

    def to_state(self) -> dict[str, Any]:
        """The record's ``continuity`` field: verbatim, redacted strings; no chat shape."""
        return {"anchors": self.anchors.to_state(), "user_words": self.words.to_state()}


def _lineage_user_messages(recall: Recall, region: list[Message]) -> list[Message]:
    """User messages of earlier compactions (oldest first) followed by the region itself."""
    in_region = {ref_for(m) for m in region if isinstance(m, dict) and m.get("role") == "user"}  # only users match
    earlier = [{"role": "user", "content": e.text} for e in recall.lineage()
               if e.role == "user" and e.ref not in in_region]
    return [*earlier, *region]


def collect(region: list[Message], recall: Recall, brief_max_tokens: int, count_text: CountText) -> Continuity:
    """Remember ``region``, then its anchors and the lineage's user words rendered within the shares above."""
    if recall.remember is not None:
        recall.remember(region)
    messages = _lineage_user_messages(recall, region)
    fixed = count_text(f"{HEADING}\n{RECALL_LINE}")
    room = max(brief_max_tokens - MIN_MAX_TOKENS - fixed, 0)
    words = collect_user_words(messages, brief_max_tokens, count_text, share=USER_WORDS_SHARE)
    if words.tokens > room:
        words = collect_user_words(messages, brief_max_tokens, count_text, share=room / max(brief_max_tokens, 1))
    anchors = extract_anchors(region)
    anchor_budget = min(int(brief_max_tokens * ANCHORS_SHARE), room - words.tokens) - count_text(ANCHORS_HEADER)
    anchor_lines = anchors.render(anchor_budget, count_text) if anchor_budget > 0 else []
    lines = [HEADING, RECALL_LINE, *words.lines(), *([ANCHORS_HEADER, *anchor_lines] if anchor_lines else [])]
    text = "\n".join(lines)
    return Continuity(anchors, words, text, count_text(text), tuple(lines))
