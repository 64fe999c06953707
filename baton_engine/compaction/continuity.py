"""What a compaction keeps within reach: the region is remembered for ``baton_recall``, and its anchors and
the user's own words go into the record (``continuity``) and the brief.

Why its own step of the cycle: the cycle is host-neutral, so the host passes recall as plain callables
(``Recall``): where the compacted region is remembered (Baton's in-process index; nothing when the host's
own session store already keeps it) and what earlier compactions of this lineage took out (so from the
second compaction on, the user's words come from the whole lineage, not only the newest region).

Brief budget ``B`` (``brief_max_tokens``): the recall line always; the handoff brief (objective, state and
every captured decision / evidence / failed attempt / open item) first, then, in what it leaves, the
user's words up to ``USER_WORDS_SHARE`` of B, the settings and decisions stated in tool results
(``anchors.stated_lines``: newest first) up to ``STATED_SHARE`` of B, and anchors up to ``ANCHORS_SHARE``
of B (``fitted``): what the model recorded on purpose is never pushed out by what Baton extracted. The
record keeps the whole selection; the brief drops, when tight, anchors first (their own order: recurring
ids, searches, files read, commands, error lines, files written), then the stated lines from the last shown,
then the user's words from the oldest (all of them stay in the record and are one ``baton_recall`` away).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton_engine.compaction.anchors import Anchors, extract_anchors
from baton_engine.compaction.scan import MessageScan, scan_of
from baton_engine.compaction.user_words import UserWords, collect_user_words
from baton_engine.handoff.render import MIN_MAX_TOKENS
from baton_engine.messages.entry import Entry, build_entries

USER_WORDS_SHARE = 0.35
ANCHORS_SHARE = 0.25
# 240 of the default 1,200: the 7 lines the rule finds in the paraphrase corpus's session cost 216 Qwen3 tokens
# (benchmarks/compaction/stated_lines_bench.py); a share of their own, so they never starve the files and commands
STATED_SHARE = 0.2
HEADING = "## Compacted detail"
RECALL_LINE = ("Earlier tool results, files, commands and user messages of this conversation were compacted out "
               "of the context; each is one `baton_recall` call away (mode=search with an identifier, path or "
               "\"quoted phrase\"; then mode=expand with a hit's ref).")
ANCHORS_HEADER = "Anchors of the compacted part (verbatim):"

Message = dict[str, Any]
CountText = Callable[[str], int]


@dataclass(frozen=True)
class Recall:
    """The host's recall, as callables: ``remember`` the compacted region's entries (None: the host's store
    keeps it), ``lineage`` the entries this lineage's compactions took out so far."""

    remember: Callable[[list[Entry]], object] | None
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
        words (newest first, as selected) and anchors as fit, dropping from the end (an anchors header is
        never left without an anchor). The longest fitting prefix is found by bisection, a few counts."""

        def prefix(size: int) -> str:
            kept = list(self.lines[:size])
            if 2 < size < len(self.lines) and kept[-1] == ANCHORS_HEADER:
                kept.pop()
            return "\n".join(kept)

        counted: dict[int, int] = {}

        def tokens(size: int) -> int:
            if size not in counted:
                counted[size] = count_text(prefix(size))
            return counted[size]

        low, high = min(2, len(self.lines)), len(self.lines)
        if tokens(high) <= budget:
            return prefix(high), tokens(high)
        while low < high:  # the longest prefix that fits (counts grow with the prefix)
            middle = (low + high + 1) // 2
            if tokens(middle) <= budget:
                low = middle
            else:
                high = middle - 1
        return prefix(low), tokens(low)

    def to_state(self) -> dict[str, Any]:
        """The record's ``continuity`` field: verbatim, redacted strings; no chat shape."""
        return {"anchors": self.anchors.to_state(), "user_words": self.words.to_state()}


def _lineage_user_messages(recall: Recall, region: list[Message],
                           scans: list[MessageScan | None]) -> tuple[list[Message], list[MessageScan | None]]:
    """User messages of earlier compactions (oldest first) followed by the region itself, with their scans
    (None for the earlier ones, which are recalled entries, not messages of this region)."""
    in_region = {s.ref for m, s in zip(region, scans, strict=True) if s is not None and m.get("role") == "user"}
    earlier = [{"role": "user", "content": e.text} for e in recall.lineage()
               if e.role == "user" and e.ref not in in_region]
    return [*earlier, *region], [*([None] * len(earlier)), *scans]


def collect(region: list[Message], recall: Recall, brief_max_tokens: int, count_text: CountText,
            scanned: Mapping[int, MessageScan] | None = None) -> Continuity:
    """Remember ``region``, then its anchors and the lineage's user words rendered within the shares above.
    Each message of the region is read once, through its memoised scan (``scanned``: the caller's, by
    ``id`` of the message; else ``scan.scan_of``)."""
    known = scanned or {}
    scans = [known.get(id(m)) or scan_of(m) if isinstance(m, dict) else None for m in region]
    by_id = {id(m): s for m, s in zip(region, scans, strict=True) if s is not None}
    if recall.remember is not None:
        recall.remember(build_entries(region, lambda m: by_id[id(m)]))
    messages, facts = _lineage_user_messages(recall, region, scans)
    fixed = count_text(f"{HEADING}\n{RECALL_LINE}")
    room = max(brief_max_tokens - MIN_MAX_TOKENS - fixed, 0)
    words = collect_user_words(messages, brief_max_tokens, count_text, share=USER_WORDS_SHARE, facts=facts)
    if words.tokens > room:
        words = collect_user_words(messages, brief_max_tokens, count_text, share=room / max(brief_max_tokens, 1),
                                   facts=facts)
    anchors = extract_anchors(region, [s.anchors for s in scans if s is not None])
    stated_budget = min(int(brief_max_tokens * STATED_SHARE), room - words.tokens)
    stated = anchors.render_stated(stated_budget, count_text) if stated_budget > 0 else []
    stated_tokens = count_text("\n".join(stated)) if stated else 0
    anchor_budget = min(int(brief_max_tokens * ANCHORS_SHARE),
                        room - words.tokens - stated_tokens) - count_text(ANCHORS_HEADER)
    anchor_lines = anchors.render(anchor_budget, count_text) if anchor_budget > 0 else []
    lines = [HEADING, RECALL_LINE, *words.lines(), *stated,
             *([ANCHORS_HEADER, *anchor_lines] if anchor_lines else [])]
    text = "\n".join(lines)
    return Continuity(anchors, words, text, count_text(text), tuple(lines))
