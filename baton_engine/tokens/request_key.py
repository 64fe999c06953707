"""``request_key``: the counter's cache key of a chat request, in time proportional to what changed.

Why incremental: the key is computed on every provider request, and serialising a 4,000-message history
(3.5 MB) cost ~6 ms per request, most of Baton's per-turn overhead, although only the last message was new.

The key is ``sha256(marshal(request without messages) || marshal(m0) || marshal(m1) || ...)`` (marshal
format 2: no back-references, so equal content in equal order gives equal bytes; each record is
self-delimiting, so the concatenation is unambiguous). A conversation that grew re-hashes only its new
messages: the hasher state after a prefix is remembered with a snapshot of that prefix (plain copies of its
dicts and lists, strings shared, so a later in-place change of a message is seen) and reused when the
snapshot equals the request's first messages and each of them has its keys in the same order. Both
comparisons are C-level, and identical strings compare by identity. Equal keys therefore mean equal
requests, with one relaxation inside messages of a remembered prefix: the key order of NESTED dicts (a tool
call's ``function``, a content part) is compared as values only; templates read those fields by name.
Anything that is not plain data gets no key (never cached).
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baton_engine.tokens.contract import ChatRequest

# Conversations remembered (LRU): a snapshot shares the request's strings, so each costs its dicts and lists.
MAX_CHAINS = 4
_PLAIN_SCALARS = (str, int, float, bool, type(None))


class _NotPlain(Exception):
    pass


@dataclass(frozen=True)
class _Chain:
    frame: bytes  # marshal of the request without its messages
    snapshot: list[Any]  # plain copies of the messages hashed so far
    orders: list[tuple[Any, ...]]  # each message's keys in order (``==`` of dicts ignores it)
    hasher: Any  # sha256 state after frame and snapshot (never updated in place: copied)


_chains: OrderedDict[int, _Chain] = OrderedDict()
_next_id = 0
_lock = threading.Lock()


def request_key(request: ChatRequest) -> str | None:
    """``"chat:"`` + the sha256 hex above; None when the request is not plain data."""
    messages = request.get("messages") if type(request) is dict else None
    try:
        frame = marshal.dumps({k: v for k, v in request.items() if k != "messages"}, 2)
        if not isinstance(messages, list):
            return "chat:" + hashlib.sha256(frame + marshal.dumps(messages, 2)).hexdigest()
        chain_id, chain = _longest_prefix(frame, messages)
        start = len(chain.snapshot) if chain is not None else 0
        hasher = chain.hasher.copy() if chain is not None else hashlib.sha256(frame)
        added = messages[start:]
        for message in added:
            hasher.update(marshal.dumps(message, 2))
        snapshot = (chain.snapshot if chain is not None else []) + [_plain(m) for m in added]
        orders = (chain.orders if chain is not None else []) + [tuple(m) for m in added]
    except (ValueError, TypeError, RecursionError, _NotPlain, AttributeError):
        return None
    _remember(chain_id, _Chain(frame, snapshot, orders, hasher.copy()))
    return "chat:" + hasher.hexdigest()


def _longest_prefix(frame: bytes, messages: list[Any]) -> tuple[int | None, _Chain | None]:
    with _lock:
        candidates = sorted(_chains.items(), key=lambda item: -len(item[1].snapshot))
    for chain_id, chain in candidates:
        size = len(chain.snapshot)
        if chain.frame != frame or size > len(messages):
            continue
        prefix = messages[:size]
        if chain.snapshot == prefix and list(map(tuple, prefix)) == chain.orders:
            return chain_id, chain
    return None, None


def _remember(chain_id: int | None, chain: _Chain) -> None:
    global _next_id
    with _lock:
        if chain_id is None or chain_id not in _chains:
            chain_id, _next_id = _next_id, _next_id + 1
        _chains[chain_id] = chain
        _chains.move_to_end(chain_id)
        while len(_chains) > MAX_CHAINS:
            _chains.popitem(last=False)


def remembered() -> Sequence[int]:
    """Message counts of the remembered conversations, most recent last (tests, memory report)."""
    with _lock:
        return [len(chain.snapshot) for chain in _chains.values()]


def _plain(value: Any) -> Any:
    """A deep copy of plain data (exact types only) with strings shared; anything else raises ``_NotPlain``."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    if kind is list:
        return [_plain(item) for item in value]
    if kind is tuple:
        return tuple(_plain(item) for item in value)
    raise _NotPlain(kind.__name__)
