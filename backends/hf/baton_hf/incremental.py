"""Per-turn chat counts that do not grow with the history: a grown conversation re-renders only its last turns.

Why: rendering the real chat template is linear in the history (about 25 us per message), so counting every
request whole made per-turn overhead grow from a few ms at 200 messages to a quarter second at 4,000. Earlier
output is reused only where this request proves it unchanged; anything unproven is rendered in full.

How a reused count stays exact. A remembered state is one full render ``R`` of messages ``M`` (plus the request
fields that reach the template), with the exact count of every prefix of ``R`` that ends at a piece boundary.
For a request ``M' = M + S``, with ``h`` the leading system message (0 or 1) and ``i``, ``o`` the last and the
one-before-last user queries of ``M`` (user messages that are not wrapped tool responses), four short renders
are needed (the two of ``M`` are usually the previous extension's two of its grown list, kept with its state):

* ``V_old = T(M[:h] + M[i:])`` must equal ``R`` with one middle chunk cut out: ``R`` starts with ``V_old[:a]`` and
  ends with ``V_old[a:]``. The skipped turns leave no trace in how the window renders (positions, counts, last
  query, tool grouping, system placement would all show up here);
* ``V_new = T(M'[:h] + M'[i:])`` must start with the same ``V_old[:a]``, so ``S`` changes nothing before ``a``;
* ``V_wide = T(M'[:h] + M'[o:])`` (one more user turn of context) must again equal ``V_new`` with a middle
  chunk inserted before ``a``: the appended messages render the same with more history, so the window is wide
  enough for them (Qwen3 drops reasoning before the last user query and Mistral places tools before the last
  user message: both happen inside the window, which starts at the last user query of ``M``);
* ``T(M[:h] + M[o:])`` and ``V_wide`` must first differ no further from their end than ``V_old`` and ``V_new``
  do: with more history in view, ``S`` changes nothing further back (a template that rewrites every earlier
  turn when some message arrives shows it here).

Then ``T(M') = R[:P] + V_new[a:]`` with ``P = len(R) - len(V_old) + a``, and its count is the remembered count
of ``R[:P]`` plus the count of ``V_new[a:]``, split where ``PieceCounter.seam_is_clean`` says that is exact.
``M`` is recognised by comparing the request's messages with deep copies taken when they were rendered, so an
edit in place is a different conversation (full render), never a stale count. The one assumption not
re-checked per request is the one every window shares: output for turns before the one-before-last user query
does not depend on what is appended. ``verify`` checks the whole scheme against full renders on a growing probe
conversation at start-up; a template failing it never takes this path.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton_engine.tokens.contract import CannotCount, ChatRequest, NotPlain, plain_copy
from baton_engine.tokens.pieces import PieceCounter

from baton_hf.chunks import Chunks

# The request fields normalize_request reads besides messages: everything else cannot change the render.
CONTEXT_KEYS = ("tools", "chat_template_kwargs", "add_generation_prompt", "continue_final_message")
# Memory: at most MAX_STATES states (LRU), each one rendered prompt of at most MAX_STATE_CHARS characters and all
# of them at most MAX_TOTAL_CHARS, two ints per piece of it, and copies of its messages' containers (their strings
# are shared with the caller's). One backend serves every agent of a process (a gateway, a parent and its
# subagents): with fewer states than agents taking turns, each agent's count rendered its whole prompt again.
MAX_STATES = 32  # conversations remembered
MAX_STATE_CHARS = 16 * 1024 * 1024  # a rendered prompt longer than this (~4M tokens) is not remembered
MAX_TOTAL_CHARS = 64 * 1024 * 1024  # the remembered prompts together (the newest is always kept)


@dataclass(frozen=True)
class _State:
    context: Any
    messages: list[Any] | None  # plain copies of the messages in ``text`` (compared, never aliased); None: not JSON
    users: tuple[int, ...]  # indices of the last two user queries (fewer when there are fewer)
    developer: bool  # a developer message is among them (vLLM may then merge system messages from anywhere)
    text: Chunks
    # machine integers, not lists of int objects: a long prompt has tens of thousands of pieces, and copying a list of
    # them per extension touched every int object (a third of a millisecond at 4,000 messages)
    starts: array[int]  # where each piece of ``text`` starts
    before: array[int]  # the exact count of ``text[:starts[k]]``
    total: int
    # renders of windows of ``messages`` by (head, start), the ones the next extension renders again as its old
    # windows (when no user query is appended they are exactly its two): only the last turns, a few KB
    windows: Mapping[tuple[int, int], str] = field(default_factory=dict)


class IncrementalCounter:
    """Exact ``count(request)`` of the rendered prompt; a grown conversation renders only its last turns."""

    def __init__(self, render: Callable[[ChatRequest], str], pieces: PieceCounter) -> None:
        self._render = render
        self._pieces = pieces
        self._states: OrderedDict[int, _State] = OrderedDict()
        self._next_key = 0
        self._lock = threading.Lock()
        self.enabled = True
        self.extended = 0  # counts answered by re-rendering only the last turns (observability, tests)

    def count(self, request: ChatRequest) -> int:
        messages = request.get("messages")
        try:
            context = plain_copy({key: request.get(key) for key in CONTEXT_KEYS})
        except NotPlain:
            context = None
        if not self.enabled or context is None or not isinstance(messages, list):
            return self._pieces.count(self._render(request))
        key, state = self._find(context, messages)
        if state is not None and len(state.messages) == len(messages):
            return state.total
        grown = self._extend(state, request, messages) if state is not None else None
        if grown is None:
            grown = self._full(request, context, messages)
        else:
            self.extended += 1
        if grown.messages is not None and len(grown.text) <= MAX_STATE_CHARS:
            self._store(key, grown)
        return grown.total

    def verify(self, requests: Sequence[ChatRequest]) -> bool:
        """Count a growing probe conversation both ways; keep this path only if every count matches a full one
        and at least one was extended (a template that never passes the checks gains nothing from it)."""
        extended_before = self.extended
        for request in requests:
            try:
                expected = self._pieces.count(self._render(request))
            except CannotCount:
                continue
            if self.count(request) != expected:
                self.enabled = False
        self.enabled = self.enabled and self.extended > extended_before
        self.clear()
        return self.enabled

    def clear(self) -> None:
        with self._lock:
            self._states.clear()

    def __getstate__(self) -> dict[str, object]:
        """Copies get the remembered states (immutable) but a fresh lock: a backend survives ``copy.deepcopy``
        (Hermes copies its context engine)."""
        with self._lock:
            state = {**self.__dict__, "_states": OrderedDict(self._states)}
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _find(self, context: Any, messages: list[Any]) -> tuple[int | None, _State | None]:
        with self._lock:
            candidates = list(self._states.items())
        for key, state in reversed(candidates):
            size = len(state.messages or ())
            if state.context == context and size <= len(messages) and state.messages == messages[:size]:
                return key, state
        return None, None

    def _store(self, key: int | None, state: _State) -> None:
        with self._lock:
            if key is None or key not in self._states:
                key, self._next_key = self._next_key, self._next_key + 1
            self._states[key] = state
            self._states.move_to_end(key)
            total = sum(len(kept.text) for kept in self._states.values())
            while len(self._states) > 1 and (len(self._states) > MAX_STATES or total > MAX_TOTAL_CHARS):
                _, dropped = self._states.popitem(last=False)
                total -= len(dropped.text)

    def _full(self, request: ChatRequest, context: Any, messages: list[Any]) -> _State:
        text = self._render(request)
        starts, before, total = self._pieces.spans(text)
        try:
            snapshot: list[Any] | None = plain_copy(messages)
        except NotPlain:
            snapshot = None
        users, developer = _roles((), False, messages, 0)
        return _State(context, snapshot, users, developer, Chunks.of(text), array("q", starts), array("q", before),
                      total)

    def _extend(self, state: _State, request: ChatRequest, messages: list[Any]) -> _State | None:
        size = len(state.messages)
        users, developer = _roles(state.users, state.developer, messages[size:], size)
        if developer or len(state.users) < 2:
            return None
        outer, inner = state.users
        head = 1 if _role(messages[0]) == "system" else 0
        if outer < head or 2 * (len(messages) - outer) > len(messages):
            return None  # the windows would cover most of the conversation: a full render is cheaper
        try:
            new_messages = plain_copy(messages[size:])
            old = state.windows.get((head, inner)) or self._render_window(request, messages[:size], head, inner)
            new = self._render_window(request, messages, head, inner)
            wide = self._render_window(request, messages, head, outer)
            wide_old = state.windows.get((head, outer)) or self._render_window(request, messages[:size], head, outer)
        except (NotPlain, CannotCount):
            return None
        if len(wide_old) - _common_prefix(wide_old, wide) > len(old) - _common_prefix(old, new):
            return None  # with more history in view, the appended messages change output further back
        cut = self._cut(state.text, old, new, wide)
        if cut is None:
            return None
        seam, at = cut
        starts, before, total = self._pieces.spans(new[seam:])
        keep = bisect.bisect_left(state.starts, at)
        if at < len(state.text) and (keep == len(state.starts) or state.starts[keep] != at):
            return None
        kept = state.before[keep] if keep < len(state.starts) else state.total
        return _State(
            state.context,
            state.messages + new_messages,
            users,
            developer,
            state.text.cut_and_append(at, new[seam:]),
            state.starts[:keep] + array("q", [at + start for start in starts]),
            state.before[:keep] + array("q", [kept + count for count in before]),
            kept + total,
            {(head, inner): new, (head, outer): wide},
        )

    def _render_window(self, request: ChatRequest, messages: list[Any], head: int, start: int) -> str:
        return self._render({**request, "messages": [*messages[:head], *messages[start:]]})

    def _cut(self, text: Chunks, old: str, new: str, wide: str) -> tuple[int, int] | None:
        """``(a, P)``: ``text[:P] + new[a:]`` is the full render of the grown conversation, both seams clean."""
        size = len(text)
        if len(old) > size or len(new) > len(wide):  # each must be the longer one with a middle cut out
            return None
        low = max(len(old) - _common_suffix(text.slice(size - len(old), size), old),
                  len(new) - _common_suffix(wide, new))
        high = min(_common_prefix(text.slice(0, len(old)), old), _common_prefix(old, new), _common_prefix(wide, new))
        if low > high:
            return None
        reach = self._pieces.max_token_length
        for seam in reversed(self._pieces.token_starts(new, low, high)):  # the latest seam: the least re-counted
            at = size - len(old) + seam
            left = text.slice(max(0, at - reach), at)
            if self._pieces.seam_is_clean(left, new[seam:seam + reach]) and self._pieces.seam_is_clean(
                left, text.slice(at, min(size, at + reach))
            ):
                return seam, at
        return None


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def _roles(users: tuple[int, ...], developer: bool, added: Sequence[Any], offset: int) -> tuple[tuple[int, ...], bool]:
    """``(users, developer)`` of a state after appending ``added`` (starting at index ``offset``)."""
    for index, message in enumerate(added, offset):
        role = _role(message)
        developer = developer or role == "developer"
        if role == "user" and not _wrapped_tool_response(message.get("content")):
            users = (*users[-1:], index)
    return users, developer


def _wrapped_tool_response(content: Any) -> bool:
    """A user message that only carries ``<tool_response>...</tool_response>`` (Qwen's multi-step tool format):
    Qwen templates do not treat it as a user query, so a window must not start there (the query it answers,
    further back, decides whether later reasoning is shown)."""
    if isinstance(content, list):
        content = "\n".join(p.get("text") or "" for p in content if isinstance(p, Mapping))
    return isinstance(content, str) and content.startswith("<tool_response>") and content.endswith("</tool_response>")


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high - 1:  # invariant: a[:low] == b[:low] and a[:high] != b[:high]
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


def _common_suffix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    if a[len(a) - high:] == b[len(b) - high:]:
        return high
    while low < high - 1:
        middle = (low + high) // 2
        if a[len(a) - middle:] == b[len(b) - middle:]:
            low = middle
        else:
            high = middle
    return low

