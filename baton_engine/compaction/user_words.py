"""The user's own words from a compacted region, kept verbatim within a share of the brief budget.

Why: the user's instructions, constraints and stated facts are the state a summary most often
loses, and they are short. Every real user message of the region is collected (Baton's blocks and
host scaffolding skipped, an exact repeat once, at its newest place). When all fit, all are kept
verbatim. When not, they are taken by tier (instructions and constraints; statements with specifics
such as numbers, names, ids, paths; other requests and questions), newest first within a tier, and
acknowledgements ("ok", "thanks") are left out. One that does not fit whole is clipped to a verbatim
prefix followed by its recall ref; one that cannot keep even a short prefix is left out (its ref
stays recallable). Lines are shown oldest first, redacted. Pure: no I/O; costs come from ``count_text``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from baton_engine.messages.markers import is_baton_message, message_text
from baton_engine.compaction.sanitize import is_real_user_request, own_words
from baton_engine.handoff.redact import redact_text
from baton_engine.messages.entry import ref_for

DEFAULT_SHARE = 0.35
HEADER = "The user's own words (oldest first):"
MIN_CLIP_CHARS = 24
_INSTRUCTION_RE = re.compile(
    r"\b(?:must|never|always|don't|do not|dont|make sure|remember|avoid|prefer|note that|keep in mind|"
    r"only|required?|requirement|rule|deadline|no more than|at most|at least)\b",
    re.IGNORECASE,
)
# A path-like token starts only where a word run starts: unanchored, a long run without a separator was retried
# from every position (quadratic; the soak found it: benchmarks/FINDINGS.md, finding 9); a match found mid-run
# implies one from its start, so the verdict is the same.
_SPECIFIC_RE = re.compile(r"\d|(?<![\w-])[\w-]+[/._][\w.-]+|(?<=[a-z,;] )[A-Z][a-z]+|\"[^\"]+\"")
_PHATIC_WORDS = frozenset(
    "ok okay k yes yeah yep no nope sure thanks thank you thx cool great nice good fine perfect right go on "
    "continue please sounds makes sense got it i see hmm alright awesome lgtm agreed and so".split()
)


@dataclass(frozen=True)
class UserWord:
    ref: str
    position: int  # index of the message in the region
    text: str  # redacted; a verbatim prefix when clipped
    clipped: bool

    def line(self) -> str:
        if self.clipped:
            return f'- "{self.text}…" [clipped; baton_recall expand ref={self.ref}]'
        return f'- "{self.text}"'


@dataclass(frozen=True)
class UserWords:
    items: tuple[UserWord, ...]  # oldest first
    collected: int
    budget_tokens: int
    tokens: int

    @property
    def omitted(self) -> int:
        return self.collected - len(self.items)

    def lines(self) -> list[str]:
        return _render(self.items)

    def to_state(self) -> dict[str, Any]:
        """For an extra field of the handoff record: text entries, no chat shape."""
        return {
            "collected": self.collected, "kept": len(self.items), "omitted": self.omitted,
            "budget_tokens": self.budget_tokens, "tokens": self.tokens,
            "items": [{"ref": w.ref, "text": w.text, "clipped": w.clipped} for w in self.items],
        }


def _render(items: Iterable[UserWord]) -> list[str]:
    chosen = sorted(items, key=lambda w: w.position)
    return [HEADER, *(w.line() for w in chosen)] if chosen else []


def tier(text: str) -> int:
    """0 instruction/constraint, 1 statement with specifics, 2 other request or question, 3 acknowledgement."""
    words = re.findall(r"[a-z']+", text.lower())
    if not words or all(word in _PHATIC_WORDS for word in words):
        return 3
    if _INSTRUCTION_RE.search(text):
        return 0
    if _SPECIFIC_RE.search(text) and not text.rstrip().endswith("?"):
        return 1
    return 2


def user_text(text: str) -> str:
    """A user message's own words, redacted: what the brief may quote."""
    return redact_text(own_words(text))[0]


class UserFacts(Protocol):
    ref: str
    user_text: str | None


def collect_user_words(messages: Sequence[Any], brief_max_tokens: int, count_text: Callable[[str], int],
                       share: float = DEFAULT_SHARE, facts: Sequence[UserFacts | None] | None = None) -> UserWords:
    """The user words of ``messages`` within ``int(brief_max_tokens * share)`` tokens (lines joined by newlines).
    ``facts``: each message's ref and ``user_text`` when the caller has them (compaction's memoised scan)."""
    budget = max(0, int(brief_max_tokens * share))
    candidates: dict[str, UserWord] = {}
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or not is_real_user_request(message) or is_baton_message(message):
            continue
        known = facts[position] if facts is not None else None
        text = known.user_text if known is not None else user_text(message_text(message))
        if text:
            candidates.pop(text, None)  # a repeat counts once, at its newest position
            candidates[text] = UserWord(known.ref if known is not None else ref_for(message), position, text, False)
    pool = list(candidates.values())
    exact = _exact_cost(count_text)
    whole = exact(pool)
    if whole <= budget:
        return UserWords(tuple(sorted(pool, key=lambda w: w.position)), len(pool), budget, whole)
    # Choose with line costs scaled to the pool's exact total (one count, not one per candidate and step),
    # then make the choice exact. The estimate of the kept lines plus one more is kept as a running sum.
    scale = whole / max(_rough_cost(pool), 1)
    kept: list[UserWord] = []
    kept_chars = 0

    def estimate_with(word: UserWord) -> int:
        return math.ceil(scale * ((len(HEADER) + kept_chars + len(word.line())) // 4 + len(kept) + 2))

    tiers = {w.text: tier(w.text) for w in pool}  # texts are unique in the pool
    for word in sorted((w for w in pool if tiers[w.text] < 3), key=lambda w: (tiers[w.text], -w.position)):
        chosen = word if estimate_with(word) <= budget else _clip(word, budget, estimate_with)
        if chosen is not None:
            kept.append(chosen)
            kept_chars += len(chosen.line())
    original = {(w.ref, w.position): w for w in pool}
    tokens = exact(kept)
    while kept and tokens > budget:  # the estimate was short: clip the last chosen exactly, or drop it
        last = kept.pop()
        clipped = _clip(original[(last.ref, last.position)], budget, lambda w: exact([*kept, w]))
        if clipped is not None:
            kept.append(clipped)
        tokens = exact(kept)
    return UserWords(tuple(sorted(kept, key=lambda w: w.position)), len(pool), budget, tokens)


def _exact_cost(count_text: Callable[[str], int]) -> Callable[[list[UserWord]], int]:
    def cost(items: list[UserWord]) -> int:
        lines = _render(items)
        return count_text("\n".join(lines)) if lines else 0

    return cost


def _rough_cost(items: list[UserWord]) -> int:
    """Characters / 4 of the rendered lines, one more per line for its newline (the estimate's shape only:
    ``collect_user_words`` scales it by an exact count)."""
    lines = _render(items)
    return sum(len(line) for line in lines) // 4 + len(lines)


def _clip(word: UserWord, budget: int, cost_with: Callable[[UserWord], int]) -> UserWord | None:
    """The longest verbatim prefix (at least MIN_CLIP_CHARS) that fits, cut at a word boundary when possible;
    ``cost_with`` is the cost of the words kept so far plus the given one."""

    def version(chars: int) -> UserWord:
        prefix = word.text[:chars]
        if chars < len(word.text) and " " in prefix[MIN_CLIP_CHARS:]:
            prefix = prefix[: prefix.rindex(" ")]
        return UserWord(word.ref, word.position, prefix.rstrip(), True)

    if cost_with(version(MIN_CLIP_CHARS)) > budget:
        return None
    low, high = MIN_CLIP_CHARS, len(word.text) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if cost_with(version(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    chosen = version(low)  # a prefix of redacted text may look like a secret the whole did not: redacted again
    return replace(chosen, text=redact_text(chosen.text)[0])
