"""``request_key``: the counter's cache key of a chat request, in time proportional to what changed.

Why incremental: the key is computed on every provider request, and serialising a whole long history for it
was most of Baton's per-turn overhead, although only the last message was new (benchmarks/FINDINGS.md,
"Figures behind the code's constants", request key).

The key is ``sha256(marshal(request without messages) || d0 || d1 || ...)`` where ``di`` is the sha256 of
message i's marshal (format 2: no back-references, so equal content in equal order gives equal bytes; a
marshal is self-delimiting and digests have a fixed size, so the concatenation is unambiguous). The digests
of a conversation's earlier messages come from a ``PrefixMemo``, which compares messages as values: equal
keys mean equal requests, except that a message whose keys were reordered in place may keep its digest
(chat templates read message fields by name). A request that is not marshal data gets no key (never cached).
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Sequence
from typing import Any

from baton_engine.tokens.prefix_memo import PrefixMemo
from baton_engine.tokens.contract import ChatRequest


def message_digest(message: Any) -> bytes | None:
    """sha256 of one message's marshal; None when it is not marshal data."""
    try:
        return hashlib.sha256(marshal.dumps(message, 2)).digest()
    except (ValueError, TypeError, RecursionError):
        return None


# The memo of requests that bring no digests: counts outside an agent (CLI, tools, a compaction's parts). An
# agent's requests bring their own from the agent's memo (``agent/memos.AgentMemos``): a few chains shared by
# many agents would be pushed out by each other's histories.
DIGESTS: PrefixMemo[bytes | None] = PrefixMemo(message_digest)


def request_key(request: ChatRequest, digests: Sequence[bytes | None] | None = None) -> str | None:
    """``"chat:"`` + the sha256 hex above; None when the request is not marshal data. ``digests``: the
    messages' ``message_digest`` when the caller already has them (the projection memo computes both)."""
    messages = request.get("messages")
    try:
        frame = marshal.dumps({k: v for k, v in request.items() if k != "messages"}, 2)
        if not isinstance(messages, list):
            return "chat:" + hashlib.sha256(frame + marshal.dumps(messages, 2)).hexdigest()
    except (ValueError, TypeError, RecursionError):
        return None
    if digests is None or len(digests) != len(messages):
        digests = DIGESTS.results(messages)
    if None in digests:
        return None
    return "chat:" + hashlib.sha256(frame + b"".join(digests)).hexdigest()  # type: ignore[arg-type]
