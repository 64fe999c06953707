"""What one kept route state costs (issue 33 item 1): the memory a ``Ledger`` keeps alive once its route is left.

    python benchmarks/host/route_state_bench.py   (prints JSON; the figures are in FINDINGS.md, "State kept per route")

Why retained bytes: a route an agent left keeps its ledger (``RouteLedgers``, at most ``route_states``) for a switch
back. While the agent is on it, its requests' messages are the conversation's own objects; once the agent moved on
(and compacted), what the ledger still references is its cost: the frame (system prompt, tool schemas), the last
request sent and the anchor's last ``RECENT_OBSERVATIONS`` requests. Measured with ``tracemalloc``: the bytes freed
when the ledger alone is dropped, after a conversation played through it the way Hermes sends it (each request a new
list of shallow copies of the messages, as Hermes' loop builds them), with the provider's usage observed.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from typing import Any

from baton_engine.agent.ledger import Ledger
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.hermes import request_view
from baton_engine.hermes.config import HermesView
from baton_engine.settings import load_settings
from baton_engine.tokens.rough import estimate_chat_request

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "a kept route costs about 0.35 MB near a 128k window; route_states stays at 8",
    "target": "at most about 2.8 MB per agent for kept routes",
    "findings": "State kept per route",
    "test": None,
}

WORDS = [f"w{n}" for n in range(3000)]
TOOLS = [{"type": "function", "function": {"name": f"tool_{n}", "description": " ".join(WORDS[n:n + 40]),
                                           "parameters": {"type": "object", "properties": {
                                               "path": {"type": "string", "description": "a file path"}}}}}
         for n in range(20)]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def played_ledger(requests: int, result_words: int, seed: int = 0) -> Ledger:
    """A ledger after ``requests`` main requests of one growing conversation (a user turn, then tool rounds whose
    results are ``result_words`` words), each counted, sent and answered with its usage."""
    rng = random.Random(seed)
    counting = BatonRuntime(load_settings(), HermesView(model="m", base_url="http://127.0.0.1:9/v1",
                                                        context_length=131_072)).for_route("m")
    system = {"role": "system", "content": text(rng, 2000)}
    conversation: list[dict[str, Any]] = [{"role": "user", "content": text(rng, 60)}]
    ledger = Ledger()
    for n in range(requests):
        body = {"model": "m", "messages": [system, *(dict(m) for m in conversation)], "tools": TOOLS}
        view = request_view.shape_for(None).read(body)
        ledger.count(view, counting)
        ledger.sent_request(view)
        ledger.observe_usage(estimate_chat_request(view.count_request()))
        call = {"id": f"c{n}", "type": "function", "function": {"name": "tool_1", "arguments": "{}"}}
        conversation += [{"role": "assistant", "content": text(rng, 40), "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": f"c{n}", "content": text(rng, result_words)}]
    return ledger


def retained(requests: int, result_words: int) -> dict[str, Any]:
    """Bytes the ledger alone keeps alive, and the conversation's size in words at its last request."""
    gc.collect()
    tracemalloc.start()
    ledger = played_ledger(requests, result_words)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    sent = ledger.sent or {}
    tokens = ledger.sent_count.tokens if ledger.sent_count is not None else None
    messages = len(sent.get("messages") or [])
    del ledger, sent
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"requests": requests, "result_words": result_words, "last_request_messages": messages,
            "last_request_tokens": tokens, "retained_bytes": before - after}


def run() -> list[dict[str, Any]]:
    # a short exchange, a working session, and one near a 128k window
    return [retained(4, 200), retained(20, 600), retained(40, 1500)]


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
