"""Two REAL Hermes agents in one process (``python agents_driver.py SPEC OUT``), taking turns.

Why its own driver: ``driver.py`` runs one agent; a gateway, or a parent with a delegated subagent, runs several
``AIAgent`` instances in one interpreter, each with the engine Hermes made for it from the one Baton registered
(0.22: ``clone_for_agent``; 0.19: ``copy.deepcopy``). The output says what the test cannot see from the model
server: whether the agents' engines, ledgers and memos are distinct objects, which conversations each engine's
memos hold, every count each engine made of a request it sent, and each engine's status.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

TAG = re.compile(r"\[agent (\w+)\]")


def _tags(messages: Any) -> list[str]:
    """The agent tags ("[agent A]") in a list of messages' user texts."""
    found: list[str] = []
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            found += TAG.findall(message["content"])
    return found


def _memo_tags(memo: Any) -> list[str]:
    """The agent tags of every conversation a ``PrefixMemo`` remembers (its chains' snapshots)."""
    if memo is None:
        return []
    chains = [*memo._protected.values(), *memo._probation.values()]  # noqa: SLF001 - the test reads the memo
    return sorted({tag for chain in chains for tag in _tags(chain.snapshot)})


def _recorded(engine: Any, counts: list[dict[str, Any]], name: str) -> None:
    """Record every main request this engine budgets: the agent and Baton's count of what it sent."""
    original = engine.on_request

    def on_request(request: dict[str, Any], **kwargs: Any) -> Any:
        rewritten = original(request, **kwargs)
        if not kwargs.get("auxiliary"):
            sent = engine.requests.ledger.sent_count
            counts.append({"agent": name, "tokens": sent.tokens if sent is not None else None,
                           "exact": sent.exact if sent is not None else None,
                           "tags": sorted(set(_tags(request.get("messages"))))})
        return rewritten

    engine.on_request = on_request


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from baton_engine.hermes.engine import BatonContextEngine
    from hermes_cli.plugins import get_plugin_context_engine
    from run_agent import AIAgent

    clones = {"calls": 0}
    original_clone = BatonContextEngine.clone_for_agent

    def counted_clone(self: Any) -> Any:
        clones["calls"] += 1
        return original_clone(self)

    BatonContextEngine.clone_for_agent = counted_clone  # type: ignore[method-assign]
    agents = {name: AIAgent(base_url=spec["base_url"], api_key="sk-test", provider="custom", model=spec["model"],
                            quiet_mode=True, skip_context_files=True, skip_memory=True,
                            enabled_toolsets=["todo", "context_engine"], max_iterations=30, tool_delay=0.0)
              for name in spec["agents"]}
    engines = {name: agent.context_compressor for name, agent in agents.items()}
    counts: list[dict[str, Any]] = []
    for name, engine in engines.items():
        _recorded(engine, counts, name)
    histories: dict[str, Any] = {name: None for name in agents}
    finals = []
    for name, text in spec["turns"]:
        result = agents[name].run_conversation(text, conversation_history=histories[name])
        histories[name] = result.get("messages")
        finals.append({"agent": name, "final_response": result.get("final_response"),
                       "completed": result.get("completed")})
    registered = get_plugin_context_engine()
    out = {
        "clone_for_agent_calls": clones["calls"],
        "finals": finals,
        "counts": counts,
        "engines": {name: {
            "class": f"{type(engine).__module__}.{type(engine).__qualname__}",
            "is_registered": engine is registered,
            "id": id(engine), "ledger_id": id(engine.requests.ledger), "memos_id": id(engine.requests.memos),
            "projected_tags": _memo_tags(engine.requests.memos._projected),  # noqa: SLF001
            "digest_tags": _memo_tags(engine.requests.memos._digests),  # noqa: SLF001
            "sent_tags": sorted(set(_tags((engine.requests.ledger.sent or {}).get("messages")))),
            "compression_count": engine.compression_count,
            "session_id": engine.compaction.session_id,
            "route": {"model": engine.route.model, "base_url": engine.route.base_url},
            "status": engine.get_status(),
        } for name, engine in engines.items()},
    }
    for name, agent in agents.items():
        agent.shutdown_memory_provider(histories[name] or [])
    return out


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    Path(sys.argv[2]).write_text(json.dumps(run(spec), indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    from driver import leave  # this directory is the script's: past finalization, as driver.py leaves

    leave(main())
