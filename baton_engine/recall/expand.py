"""Page one compacted message back in within an exact token budget.

The whole message when it fits; otherwise the widest window of whole lines around the match (or a
given line) that fits, found by binary search over the window size with the injected exact
counter; a single line too long for the budget is cut to the longest prefix that fits. The budget
applies to the returned ``text``, which is redacted before it is counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from baton_engine.errors import NotFoundError, UserInputError
from baton_engine.handoff.redact import redact_text
from baton_engine.recall.source import RecallSource
from baton_engine.recall.query import parse_query
from baton_engine.recall.search import ARGUMENTS_CHARS, CountText, clip_redacted, int_in_range, locate

MAX_BUDGET_TOKENS = 1_000_000
MAX_REF_CHARS = 64


@dataclass(frozen=True)
class Expansion:
    """What ``expand`` returns: the text, its exact cost, and which lines of the message it holds."""

    ref: str
    role: str
    tool_name: str | None
    arguments: str | None
    text: str
    tokens: int
    first_line: int
    last_line: int
    total_lines: int
    complete: bool

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _window(anchor: int, size: int, total: int) -> tuple[int, int]:
    """[start, end) of ``size`` lines centred on ``anchor``, shifted to stay inside the message.

    Each larger size contains the smaller one, so the token count grows with ``size``.
    """
    start = max(0, min(anchor - size // 2, total - size))
    return start, start + size


def _largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in [0, high] with fits(n), assuming fits is monotone (fits(0) is true)."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    while low and not fits(low):  # a tokenizer is only nearly monotone: step down until it really fits
        low -= 1
    return low


def expand(source: RecallSource, ref: str, budget_tokens: int, count_text: CountText,
           around: int | None = None, query: str | None = None) -> Expansion:
    """The message ``ref`` (or the part of it around line ``around`` / the first match of ``query``)."""
    if not int_in_range(budget_tokens, 1, MAX_BUDGET_TOKENS):
        raise UserInputError(f"budget_tokens must be an integer from 1 to {MAX_BUDGET_TOKENS:,}")
    if not isinstance(ref, str) or not ref.strip() or len(ref) > MAX_REF_CHARS:
        raise UserInputError("ref must be a hit's ref, e.g. msg-0123456789abcdef")
    entry = source.get(ref.strip())
    if entry is None:
        raise NotFoundError("no compacted message with that ref in this session; run a search for fresh refs")
    text = redact_text(entry.text)[0]
    lines = text.split("\n")
    if around is not None and not int_in_range(around, 1, len(lines)):
        raise UserInputError(f"around must be a line number from 1 to {len(lines)} for this message")
    tool_name = clip_redacted(entry.tool_name, ARGUMENTS_CHARS)
    arguments = clip_redacted(entry.arguments, ARGUMENTS_CHARS)
    tokens = count_text(text)
    if tokens <= budget_tokens:
        return Expansion(entry.ref, entry.role, tool_name, arguments, text, tokens, 1, len(lines), len(lines), True)
    anchor = around - 1 if around is not None else 0
    if around is None and query is not None:
        span = locate(text, parse_query(query).terms)
        anchor = text.count("\n", 0, span[0]) if span else 0

    def lines_fit(size: int) -> bool:
        start, end = _window(anchor, size, len(lines))
        return size == 0 or count_text("\n".join(lines[start:end])) <= budget_tokens

    size = _largest(lines_fit, len(lines))
    if size:
        start, end = _window(anchor, size, len(lines))
        shown = "\n".join(lines[start:end])
    else:
        line = lines[anchor]
        cut = _largest(lambda n: n == 0 or count_text(line[:n]) <= budget_tokens, len(line))
        start, end, shown = anchor, anchor + 1, line[:cut]
    return Expansion(entry.ref, entry.role, tool_name, arguments, shown, count_text(shown) if shown else 0,
                     start + 1, end, len(lines), False)
