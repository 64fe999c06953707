"""Build the message list a compaction hands back to the host: Baton block, notice, verbatim tail.

Layout (after any leading system messages of the input, kept verbatim for the gateway path)::

    user       Baton block: provenance line, STALE banner?, brief, end line
    assistant  continuation notice             <- only when a user message follows
    user       latest user request, verbatim   <- only when it did not fit the fresh tail
    ...        fresh tail, verbatim, pair-safe

When no user message follows the block, the notice is appended to the block's own message instead,
so roles always alternate. ``fresh_tail_tokens=0`` therefore gives ``[user block, assistant notice,
user request]``, or the single ``[user block+notice]`` when the transcript holds no user request.

Why not the seed's ``[system block, user notice]``: Hermes' Anthropic adapter keeps only the LAST
system message as the system prompt (a system block would silently replace the agent's prompt), its
Bedrock and Gemini adapters fold every system message into the prompt, and Hermes' own compressor
pins its summary to ``user`` for the same reason (#52160). With the block as ``user``, a separate
notice that is also ``user`` would put two user turns in a row (rejected by strict-alternation
templates and rewritten by Hermes' repair pass), and a notice that swallowed the request would have
to be parsed apart again at the next compaction, risking the user's words. So the request stays its
own verbatim message and a one-line assistant notice sits between block and request: three messages.

Pure and total: no I/O, no Hermes import, never raises; same input -> same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from baton_engine.messages.markers import (
    RECALL_TOOL,
    STALE_BANNER,
    degraded_note,
    degraded_notice_text,
    end_line,
    inflight_stub,
    notice_text,
    provenance_line,
)
from baton_engine.compaction.sanitize import Message, Sanitized, Unit, sanitize
from baton_engine.tokens.contract import copy_json
from baton_engine.handoff.model import HandoffRecord
from baton_engine.tokens.rough import estimate_messages_tokens_rough

CountTokens = Callable[[list[Message]], int]
DEFAULT_MAX_BLOCK_TOKENS = 1400
TRUNCATION_MARK = "[... brief truncated to fit the handoff block budget]"
UNCOUNTABLE_TOKENS = 1 << 40  # what a message costs when even the rough estimate fails: never fits

DegradeReason = Literal[
    "validation_failed", "not_initialised", "disk_not_writable", "tokenizer_down", "internal_error", "window_overflow",
    "unspecified"
]
_DEGRADE_EXPLANATIONS: dict[str, str] = {
    "validation_failed": "the new handoff record failed validation",
    "not_initialised": "Baton is not initialised for this project, so no handoff could be stored",
    "disk_not_writable": "the handoff store is not writable",
    "tokenizer_down": "exact token counting is unavailable",
    "internal_error": "Baton hit an internal error while compacting",
    "window_overflow": ("this request did not fit the model's window and no compaction could run before it, so it "
                        "carries only the most recent messages; the conversation itself is unchanged"),
    "unspecified": "the compaction could not complete",
}


@dataclass(frozen=True)
class BatonBlock:
    """What the block shows: the handoff's identity and its already-rendered brief (<= ~1,200 tokens)."""

    short_id: str
    status: str
    captured_at: str
    brief: str
    stale: bool = False

    @classmethod
    def from_record(cls, record: HandoffRecord, brief: str) -> BatonBlock:
        freshness = record.validation.freshness
        return cls(
            short_id=record.short_id,
            status=record.status,
            captured_at=record.created_at,
            brief=brief,
            stale=bool(freshness and freshness.stale),
        )


@dataclass(frozen=True)
class CompactionResult:
    """The new message list plus what was decided and repaired (counts only: safe to log)."""

    messages: list[Message]
    block_tokens: int = 0
    tail_tokens: int = 0
    tail_messages: int = 0
    brief_truncated: bool = False
    block_over_budget: bool = False
    latest_request_carried: bool = False
    replaced_blocks: int = 0
    dropped_orphans: int = 0
    stripped_tool_calls: int = 0
    dropped_malformed: int = 0
    dropped_system: int = 0
    counting_fell_back: bool = False
    inflight_messages: int = 0  # messages of unanswered tool-call groups kept (verbatim or stubbed)
    inflight_elided: int = 0  # how many of those results were replaced by stubs


class GuardedCounter:
    """The caller's counter, made total: a failure or a nonsense answer becomes rough + 10%."""

    def __init__(self, count_tokens: CountTokens) -> None:
        self._count_tokens = count_tokens
        self.fell_back = False

    def __call__(self, messages: list[Message]) -> int:
        try:
            value = self._count_tokens(messages)
        except Exception:  # noqa: BLE001 - the caller's counter (a host's tokenizer): its failure is a rough count
            value = None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        self.fell_back = True
        try:
            rough = estimate_messages_tokens_rough(messages)
        except (TypeError, ValueError, RecursionError):  # a value the estimate cannot serialise: never fits
            return UNCOUNTABLE_TOKENS
        return rough + rough // 10


def build_compacted_messages(
    messages: Any,
    *,
    block: BatonBlock,
    fresh_tail_tokens: int,
    count_tokens: CountTokens,
    max_block_tokens: int = DEFAULT_MAX_BLOCK_TOKENS,
    inflight_tokens: int | None = None,
    plan: TailPlan | None = None,
) -> CompactionResult:
    """Replace ``messages`` by the Baton block, a notice and the freshest turns that fit.

    ``count_tokens`` counts a list of messages (exactly, ideally). The block is fitted to
    ``max_block_tokens`` by truncating the brief; the tail is the longest run of whole units
    (a tool-call message with all its results is one unit) at the end of the transcript whose
    count is <= ``fresh_tail_tokens``. The latest real user request is always kept, inside the
    tail or right after the notice. Earlier Baton messages are dropped: the new block replaces them.

    In-flight results — the newest tool-call group, when the model has not answered it yet — are kept on
    top of the fresh tail, verbatim while they fit ``inflight_tokens`` (default: the fresh tail budget);
    each result that does not is replaced in place by a stub that keeps the pair valid and says what it
    was and why it is gone: a compaction never drops a result before the model has seen it, unannounced.
    ``plan`` (from :func:`plan_tail` with the same arguments) skips choosing the tail again.
    """
    counter = GuardedCounter(count_tokens)
    plan = plan or _plan(messages, _non_negative(fresh_tail_tokens), counter,
                         _inflight_budget(fresh_tail_tokens, inflight_tokens))
    return _build(plan, block, counter, _non_negative(max_block_tokens))


def degrade(
    messages: Any,
    *,
    reason: DegradeReason | str,
    keep_recent: int,
    max_tokens: int,
    count_tokens: CountTokens,
) -> CompactionResult:
    """Compaction without a new handoff: recent messages only, plus a note saying why.

    Keeps the most recent whole units within ``keep_recent`` messages and ``max_tokens`` tokens,
    always the latest user request, and the most recent earlier Baton block (it still describes
    everything before it). The note names the reason code only: no prompt text, no secrets.
    """
    counter = GuardedCounter(count_tokens)
    state = sanitize(messages)
    header = degraded_header(reason)[1]
    if state.previous_block:
        header = f"{header}\n\n{state.previous_block}"
    limit_messages, limit_tokens = _non_negative(keep_recent), _non_negative(max_tokens)

    def fits(start: int) -> bool:
        candidate = _flatten(state.units[start:])
        return len(candidate) <= limit_messages and counter(candidate) <= limit_tokens

    tail_start = longest_fitting_suffix(len(state.units), fits)
    return _result(state, header, degraded_notice_text(), tail_start, counter, block_tokens=0)


@dataclass(frozen=True)
class TailPlan:
    """Which messages a compaction keeps (tail, in-flight group) and which leave the context (``region``).

    Why separate from building the list: the tail does not depend on the block, and the cycle needs the
    region (to index it and to extract its anchors and user words) before it writes the brief.
    """

    state: Sanitized
    tail_start: int
    inflight: list[Unit]
    elided: int
    region: list[Message]


def plan_tail(messages: Any, *, fresh_tail_tokens: int, count_tokens: CountTokens,
              inflight_tokens: int | None = None) -> TailPlan:
    """The tail :func:`build_compacted_messages` keeps for these arguments, and the compacted region:
    every message it drops (the carried latest request excepted), plus the original of each stubbed
    in-flight result with the call it answers. May raise (the builder itself is total)."""
    return _plan(messages, _non_negative(fresh_tail_tokens), GuardedCounter(count_tokens),
                 _inflight_budget(fresh_tail_tokens, inflight_tokens))


def _inflight_budget(fresh_tail_tokens: int, inflight_tokens: int | None) -> int:
    return _non_negative(fresh_tail_tokens if inflight_tokens is None else inflight_tokens)


def _plan(messages: Any, fresh_tail_tokens: int, counter: GuardedCounter, inflight_tokens: int) -> TailPlan:
    state = sanitize(messages)
    first_inflight = _first_inflight(state.units)
    answered, inflight = state.units[:first_inflight], state.units[first_inflight:]
    elided, stubbed_originals = 0, []
    if inflight:
        kept, elided = _fitted(inflight[0], counter, inflight_tokens)
        if elided:
            stubbed_originals = [inflight[0][0], *(m for m, k in zip(inflight[0][1:], kept[1:], strict=True)
                                                   if m is not k)]
        inflight = [kept]
        state = replace(state, units=[*answered, kept])

    def fits(start: int) -> bool:
        return counter(_flatten(answered[start:])) <= fresh_tail_tokens

    tail_start = longest_fitting_suffix(len(answered), fits) if fresh_tail_tokens > 0 else len(answered)
    carried = state.latest_request_unit
    region = [m for index, unit in enumerate(answered[:tail_start]) if index != carried for m in unit]
    return TailPlan(state, tail_start, inflight, elided, [*region, *stubbed_originals])


def _build(plan: TailPlan, block: BatonBlock, counter: GuardedCounter, max_block_tokens: int) -> CompactionResult:
    block_text, block_tokens, truncated, over_budget = _fit_block(block, counter, max_block_tokens)
    result = _result(plan.state, block_text, notice_text(block.short_id), plan.tail_start, counter,
                     block_tokens=block_tokens)
    return _with(result, brief_truncated=truncated, block_over_budget=over_budget,
                 inflight_messages=len(_flatten(plan.inflight)), inflight_elided=plan.elided)


def _first_inflight(units: list[Unit]) -> int:
    """Index of the newest tool-call group when nothing follows it: results no request the model answered
    has carried yet (every earlier result was in the request that produced the next call)."""
    last = len(units) - 1
    if last >= 0 and units[last][0].get("role") == "assistant" and units[last][0].get("tool_calls"):
        return last
    return len(units)


def _fitted(unit: Unit, counter: GuardedCounter, budget: int) -> tuple[Unit, int]:
    """The group whole when it fits ``budget``; else each result, in order, verbatim when it fits together with
    the call, the results kept so far and the stubs of the others (``baton_recall`` answers first), the rest
    replaced in place by a stub naming the call, its size and what to do (the pair stays valid). Counting the
    stubs keeps a group that keeps any result verbatim within its room."""
    if counter(unit) <= budget:
        return unit, 0
    calls = {call.get("id"): call.get("function") or {} for call in unit[0].get("tool_calls") or []
             if isinstance(call, dict)}
    results = unit[1:]
    kept = []
    for result in results:
        function = calls.get(result.get("tool_call_id")) or {}
        kept.append({**result, "content": inflight_stub(str(function.get("name") or "tool"),
                                                        str(function.get("arguments") or ""),
                                                        counter([result]), budget)})
    names = [str((calls.get(result.get("tool_call_id")) or {}).get("name") or "") for result in results]
    # baton_recall answers first: the model asked for them to see what an earlier compaction took out
    for index in sorted(range(len(results)), key=lambda i: names[i] != RECALL_TOOL):
        candidate = [*kept[:index], results[index], *kept[index + 1:]]
        if counter([unit[0], *candidate]) <= budget:
            kept = candidate
    return [unit[0], *kept], sum(1 for k, r in zip(kept, results, strict=True) if k is not r)


def _result(
    state: Sanitized, header: str, notice: str, tail_start: int, counter: GuardedCounter, *, block_tokens: int
) -> CompactionResult:
    tail = _flatten(state.units[tail_start:])
    latest = state.latest_request_unit
    carried = latest is not None and latest < tail_start
    conversation = ([state.units[latest][0]] if carried else []) + tail
    head = baton_head(header, notice, conversation[0]["role"] if conversation else None)
    return CompactionResult(
        messages=[*map(copy_json, state.leading_system), *head, *map(copy_json, conversation)],  # never aliased
        block_tokens=block_tokens,
        tail_tokens=counter(tail) if tail else 0,
        tail_messages=len(tail),
        latest_request_carried=carried,
        replaced_blocks=state.dropped["replaced"],
        dropped_orphans=state.dropped["orphans"],
        stripped_tool_calls=state.dropped["stripped_calls"],
        dropped_malformed=state.dropped["malformed"],
        dropped_system=state.dropped["system"],
        counting_fell_back=counter.fell_back,
    )


def baton_head(header: str, notice: str, first_role: Any) -> list[Message]:
    """Baton's messages before the kept conversation: the header as ``user``, and the notice as ``assistant`` when a
    ``user`` message follows (else in the header's own message), so roles always alternate."""
    if first_role == "user":
        return [{"role": "user", "content": header}, {"role": "assistant", "content": notice}]
    return [{"role": "user", "content": f"{header}\n\n{notice}"}]


def degraded_header(reason: DegradeReason | str) -> tuple[str, str]:
    """``(reason code, note)`` of a compaction without a new handoff (an unknown reason is ``unspecified``)."""
    code = reason if isinstance(reason, str) and reason in _DEGRADE_EXPLANATIONS else "unspecified"
    return code, degraded_note(code, _DEGRADE_EXPLANATIONS[code])


def _fit_block(block: BatonBlock, counter: GuardedCounter, max_tokens: int) -> tuple[str, int, bool, bool]:
    """Render the block; if it is over budget, keep the longest prefix of the brief that fits."""
    head = [provenance_line(block.short_id, block.status, block.captured_at)]
    if block.stale:
        head.append(STALE_BANNER)
    closing = end_line(block.short_id)
    brief = block.brief.strip() if isinstance(block.brief, str) else ""

    def render(body: str) -> str:
        return "\n\n".join([*head, body, closing]) if body else "\n\n".join([*head, closing])

    def measure(text: str) -> int:
        return counter([{"role": "user", "content": text}])

    full = render(brief)
    tokens = measure(full)
    if tokens <= max_tokens:
        return full, tokens, False, False

    def truncated(length: int) -> str:
        kept = brief[:length].rstrip()
        return render(f"{kept}\n{TRUNCATION_MARK}" if kept else TRUNCATION_MARK)

    fitting, failing = -1, len(brief)  # binary search for the longest prefix whose block fits
    while failing - fitting > 1:
        middle = (fitting + failing) // 2
        if measure(truncated(middle)) <= max_tokens:
            fitting = middle
        else:
            failing = middle
    text = truncated(max(fitting, 0))
    tokens = measure(text)
    return text, tokens, True, tokens > max_tokens


def longest_fitting_suffix(count: int, fits: Callable[[int], bool]) -> int:
    """Smallest start index whose suffix of ``count`` whole units fits (``fits(start)``), probing 1, 2, 4 ... units
    then bisecting.

    Only suffixes that were actually measured as fitting are returned, so the budget holds even
    for a counter that is not monotone; the number of counts grows with log(kept units).
    """
    fitting, failing, size = count, -1, 1
    while fitting > 0:
        start = max(count - size, 0)
        if not fits(start):
            failing = start
            break
        fitting, size = start, size * 2
    while fitting - failing > 1:
        middle = (fitting + failing) // 2
        if fits(middle):
            fitting = middle
        else:
            failing = middle
    return fitting


def _flatten(units: list[Unit]) -> list[Message]:
    return [message for unit in units for message in unit]


def _non_negative(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _with(result: CompactionResult, **changes: Any) -> CompactionResult:
    return CompactionResult(**{**result.__dict__, **changes})
