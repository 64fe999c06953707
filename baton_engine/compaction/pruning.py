"""What reclamation may take out of a transcript before any compaction, and the list with it taken out.

Why: on a large window every tool result is re-sent with each request until the compaction trigger, long after the
model answered it. A candidate is something the model already answered, outside the part a compaction would keep
verbatim: a byte-identical repeat of a later tool result (any size: nothing is lost), a large tool result, an
oversized argument of a tool call, an image. Each becomes a one-line stub naming the call, its size and its recall
ref (``markers.pruned_stub``), so the whole text stays one ``baton_recall`` away. Never touched: the results not yet
answered, the pair-safe tail (``tail_tokens``, whole units from the end), the latest user request, Baton's own
messages and tools' answers, anything already a stub. Pairs stay whole: a stub replaces a message's content in place
(every other key kept, the host's bookkeeping too), never the message.

Which candidates are taken is the prompt cache's decision (``prompt_cache.choose_cut``): all of them from one index
on, so the provider's cached prefix breaks once. Pure and host-neutral: no I/O, no counting of its own (``cost_of``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from baton_engine.compaction.sanitize import Message, Unit, sanitize
from baton_engine.compaction.anchors import stated_lines
from baton_engine.messages.entry import entry_text, json_object, message_key, ref_for, ref_of
from baton_engine.messages.markers import (
    BATON_TOOLS,
    PRUNED_ARGUMENT_CHARS,
    PRUNED_PREFIX,
    STUB_PREFIX,
    call_label,
    message_text,
    pruned_image,
    pruned_stub,
)
from baton_engine.prompt_cache import Cut, Verdict, choose_cut
from baton_engine.tokens.media import part_tokens

CostOf = Callable[[Message], int]
Kind = Literal["repeat", "result", "arguments", "image"]
# An argument value shorter than this many characters stays as written (paths, commands, line ranges): only the
# bulk a ``write_file`` or ``patch`` carries is worth a stub.
MIN_ARGUMENT_VALUE_CHARS = 400
# A pruned result keeps the settings and decisions it stated (``anchors.stated_lines``, what a compaction's brief
# keeps of it): a fact stated once in a file read stays in the window, not only one recall away (the paraphrase
# corpus lost one otherwise: benchmarks/FINDINGS.md, "Reclamation"). At most this many, each cut at this length.
MAX_STATED = 3
MAX_STATED_CHARS = 200


@dataclass(frozen=True)
class Candidate:
    """One message that can be reclaimed: its index in the host's list, what it is, the tokens its stub saves (by
    ``cost_of``), the message with the stub, and what recall must keep (the original, with the call it answers)."""

    index: int
    kind: Kind
    saved: int
    replacement: Message
    recalled: tuple[Message, ...]


def with_media(text_cost: CostOf) -> CostOf:
    """A message's cost: its images and documents at their own price (``tokens.media``), the rest by ``text_cost``
    (an image's base64 is no measure of what it costs, and a stub in its place must be seen to save it)."""

    def cost_of(message: Message) -> int:
        content = message.get("content")
        if not isinstance(content, list):
            return text_cost(message)
        media = sum(part_tokens(part) or 0 for part in content)
        return text_cost({**message, "content": [part for part in content if part_tokens(part) is None]}) + media

    return cost_of


def candidates(messages: Sequence[Any], *, tail_tokens: int, cost_of: CostOf, min_result_tokens: int,
               min_argument_tokens: int) -> list[Candidate]:
    """The reclaimable messages of ``messages`` in list order (at most one candidate per message)."""
    position = {id(message): index for index, message in enumerate(messages)}
    state = sanitize(messages)
    protected = _protected_units(state.units, state.latest_request_unit, tail_tokens, cost_of)
    newest_copy = _newest_copies(messages)
    found: dict[int, Candidate] = {}
    for number, unit in enumerate(state.units):
        if number in protected:
            continue
        head = _host_head(messages, position, unit)
        calls = _calls_of(head)
        for message in (head, *unit[1:]):
            index = position.get(id(message))
            if index is None:  # a message sanitize repaired (a new dict): not the host's, never rewritten
                continue
            candidate = _candidate(index, message, head, calls, newest_copy, cost_of, min_result_tokens,
                                   min_argument_tokens)
            if candidate is not None:
                found[index] = candidate
    return [found[index] for index in sorted(found)]


def apply(messages: Sequence[Any], chosen: Sequence[Candidate]) -> list[Any]:
    """A new list: each chosen candidate's message replaced by its stubbed copy, everything else the same object."""
    replaced = {candidate.index: candidate.replacement for candidate in chosen}
    return [replaced.get(index, message) for index, message in enumerate(messages)]


def _protected_units(units: list[Unit], latest_request: int | None, tail_tokens: int, cost_of: CostOf) -> set[int]:
    """The units never touched: the newest tool group when nothing answered it, the whole units from the end within
    ``tail_tokens`` (at least the last one), and the latest user request."""
    protected: set[int] = set()
    if units and units[-1][0].get("role") == "assistant" and units[-1][0].get("tool_calls"):
        protected.add(len(units) - 1)
    spent = 0
    for number in range(len(units) - 1, -1, -1):
        spent += sum(cost_of(message) for message in units[number])
        if spent > tail_tokens and protected:
            break
        protected.add(number)
    if latest_request is not None:
        protected.add(latest_request)
    return protected


def _host_head(messages: Sequence[Any], position: dict[int, int], unit: Unit) -> Message:
    """A unit's first message as the host holds it: sanitize copies a tool group's assistant message (without the
    calls it strips); the host's own is the message before its first result when it has the very same calls."""
    head = unit[0]
    if len(unit) > 1 and id(unit[1]) in position:
        before = position[id(unit[1])] - 1
        original = messages[before] if before >= 0 else None
        if isinstance(original, dict) and original.get("tool_calls") == head.get("tool_calls"):
            return original
    return head


def _calls_of(head: Message) -> dict[str, tuple[str, str]]:
    """call id -> (name, arguments) of an assistant message's tool calls."""
    found = {}
    for call in head.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and call.get("id"):
            found[str(call["id"])] = (str(function.get("name") or "tool"), str(function.get("arguments") or ""))
    return found


def _newest_copies(messages: Sequence[Any]) -> dict[str, int]:
    """A tool result's text -> the index of its newest copy (the one a repeat's stub leaves in place)."""
    newest = {}
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "tool" and isinstance(message.get("content"), str):
            newest[message["content"]] = index
    return newest


def _candidate(index: int, message: Message, head: Message, calls: dict[str, tuple[str, str]],
               newest_copy: dict[str, int], cost_of: CostOf, min_result_tokens: int,
               min_argument_tokens: int) -> Candidate | None:
    role = message.get("role")
    if role == "tool":
        name, arguments = calls.get(str(message.get("tool_call_id") or ""), ("tool", ""))
        if name in BATON_TOOLS or _is_stub(message_text(message)):
            return None
        content = message.get("content")
        repeat = isinstance(content, str) and newest_copy.get(content, index) > index
        tokens = cost_of(message)
        if not repeat and tokens < min_result_tokens:
            return _image_candidate(index, message, cost_of)
        what = "repeat of the result" if repeat else "result"
        key = message_key(message)
        stated = () if repeat else tuple(line[:MAX_STATED_CHARS] for line in stated_lines(entry_text(key))[:MAX_STATED])
        stub = pruned_stub(what, call_label(name, arguments, PRUNED_ARGUMENT_CHARS), tokens, ref_of(key), stated)
        return _made(index, "repeat" if repeat else "result", message, {**message, "content": stub}, cost_of,
                     (head, message))
    if role == "assistant" and calls:
        return _arguments_candidate(index, message, cost_of, min_argument_tokens)
    if role == "user":
        return _image_candidate(index, message, cost_of)
    return None


def _made(index: int, kind: Kind, message: Message, replacement: Message, cost_of: CostOf,
          recalled: tuple[Message, ...]) -> Candidate | None:
    saved = cost_of(message) - cost_of(replacement)
    return Candidate(index, kind, saved, replacement, recalled) if saved > 0 else None


def _arguments_candidate(index: int, message: Message, cost_of: CostOf, min_tokens: int) -> Candidate | None:
    """A tool call whose arguments alone cost ``min_tokens`` or more: each long string value in them becomes a stub
    (the arguments stay a JSON object of the same keys, so every shape's reader still parses them)."""
    ref = ref_for(message)
    changed = False
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        parsed = json_object(arguments) if isinstance(arguments, str) else None
        if parsed is None or cost_of({"role": "assistant", "content": arguments}) < min_tokens:
            calls.append(call)
            continue
        name = str(function.get("name") or "tool")
        shortened = {key: _stubbed_value(key, value, name, ref, cost_of) for key, value in parsed.items()}
        if shortened == parsed:
            calls.append(call)
            continue
        changed = True
        calls.append({**call, "function": {**function, "arguments": json.dumps(shortened, ensure_ascii=False)}})
    if not changed:
        return None
    return _made(index, "arguments", message, {**message, "tool_calls": calls}, cost_of, (message,))


def _stubbed_value(key: str, value: Any, name: str, ref: str, cost_of: CostOf) -> Any:
    if not isinstance(value, str) or len(value) < MIN_ARGUMENT_VALUE_CHARS or _is_stub(value):
        return value
    tokens = cost_of({"role": "assistant", "content": value})
    return pruned_stub(f"argument {key}", call_label(name, ""), tokens, ref)


def _image_candidate(index: int, message: Message, cost_of: CostOf) -> Candidate | None:
    """A message whose content parts include images or documents: each becomes a text part saying so (an image has
    no text for recall to keep: the stub says to ask for it again)."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    parts, retired = [], False
    for part in content:
        tokens = part_tokens(part)
        if tokens is None:
            parts.append(part)
        else:
            retired = True
            parts.append({"type": "text", "text": pruned_image(tokens)})
    if not retired:
        return None
    return _made(index, "image", message, {**message, "content": parts}, cost_of, ())


def _is_stub(text: str) -> bool:
    return text.lstrip().startswith((PRUNED_PREFIX, STUB_PREFIX))


@dataclass(frozen=True)
class Reclaim:
    """A prune decided: the new list and what it took out (``messages`` None: declined, ``verdict.reason`` why);
    ``before`` / ``after`` the two requests' counts, ``exact`` whether both were exact."""

    verdict: Verdict
    messages: list[Any] | None = None
    pruned: tuple[Candidate, ...] = ()
    before: int = 0
    after: int = 0
    exact: bool = False

    @property
    def reclaimed(self) -> int:
        return self.before - self.after if self.messages is not None else 0


CountList = Callable[[list[Any]], tuple[int | None, bool]]


def reclaim(messages: Sequence[Any], *, before: int, count: CountList, cost_of: CostOf, tail_tokens: int,
            min_reclaim: int, min_result_tokens: int, min_argument_tokens: int, horizon: float, ratio: float,
            hit: float) -> Reclaim:
    """Decide a prune of ``messages`` (a request of ``before`` tokens): the cut the cost model prefers among the
    candidates (``prompt_cache.choose_cut``, on ``cost_of`` estimates), then the pruned list counted (``count``: its
    tokens and whether exact), and the cut checked again on that count. ``horizon``: requests until the next
    compaction; ``ratio`` the cached price ratio; ``hit`` the route's cache hit share."""
    cost_of = _each_once(messages, cost_of)
    found = candidates(messages, tail_tokens=tail_tokens, cost_of=cost_of, min_result_tokens=min_result_tokens,
                       min_argument_tokens=min_argument_tokens)
    verdict = choose_cut(_cuts(messages, found, before, cost_of), min_reclaim=min_reclaim, horizon=horizon,
                         ratio=ratio, hit=hit)
    if verdict.cut is None:
        return Reclaim(verdict, before=before)
    chosen = tuple(candidate for candidate in found if candidate.index >= verdict.cut.first)
    pruned = apply(messages, chosen)
    after, exact = count(pruned)
    if after is None:
        return Reclaim(Verdict(None, "uncountable"), before=before)
    measured = replace(verdict.cut, reclaimed=before - after, suffix=max(after - verdict.cut.kept_prefix, 0))
    checked = choose_cut([measured], min_reclaim=min_reclaim, horizon=horizon, ratio=ratio, hit=hit)
    if checked.cut is None:
        return Reclaim(checked, before=before, after=after, exact=exact)
    return Reclaim(checked, pruned, chosen, before, after, exact)


def _each_once(messages: Sequence[Any], cost_of: CostOf) -> CostOf:
    """``cost_of`` estimating each of the host's messages once per decision (the tail, the candidates and the cuts
    all ask for them); a message made on the way (a stub, an argument's text) is estimated as asked."""
    host = {id(message) for message in messages}
    known: dict[int, int] = {}

    def cost(message: Message) -> int:
        key = id(message)
        if key not in host:
            return cost_of(message)
        if key not in known:
            known[key] = cost_of(message)
        return known[key]

    return cost


def _cuts(messages: Sequence[Any], found: Sequence[Candidate], before: int, cost_of: CostOf) -> list[Cut]:
    """Each cut (every candidate from one on): the prefix it keeps, the suffix it leaves, what it reclaims; in
    tokens of ``before``'s scale (the estimates scaled so that the whole list is ``before``)."""
    if not found:
        return []
    costs = [cost_of(message) if isinstance(message, dict) else 0 for message in messages]
    scale = before / max(sum(costs), 1)
    prefix, starts = 0.0, {}
    wanted = {candidate.index for candidate in found}
    for index, cost in enumerate(costs):
        if index in wanted:
            starts[index] = prefix
        prefix += cost * scale
    cuts, reclaimed = [], 0.0
    for candidate in reversed(found):
        reclaimed += candidate.saved * scale
        kept = starts[candidate.index]
        cuts.append(Cut(candidate.index, round(kept), max(round(before - kept - reclaimed), 0), round(reclaimed)))
    return cuts
