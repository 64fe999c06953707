"""No network: the engine, through a whole Hermes session's calls, connects nowhere except the configured
tokenizer URL.

A socket guard (``batontest.socket_guard``) patches ``socket.socket.connect``/``connect_ex``,
``socket.create_connection`` and ``socket.getaddrinfo``: every attempt is recorded, disallowed ones
are refused. The engine runs in-process so the guard sees everything it does. The CLI's half (and the
guard's own test) is ``tests/cli/test_no_network.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batontest.engine_kit import TIKTOKEN_ENV, installed_runtime, make_engine
from batontest.engines import hermes_estimator
from batontest.faulty_servers import FaultyServer
from batontest.socket_guard import SocketGuard, address_of


def engine_session(project: Path) -> list[dict[str, Any]]:
    """Turn checks, tools, a compaction and status: everything an engine does in a Hermes session."""
    pytest.importorskip("agent.conversation_loop")
    from batontest.engines import activated

    messages = [{"role": "user", "content": "Fix the bug."}]
    for i in range(8):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                      "function": {"name": "read_file", "arguments": '{"path": "README.md"}'}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": "text " * 200},
                     {"role": "assistant", "content": f"step {i}"}]
    messages.append({"role": "user", "content": "Continue."})
    with activated() as activation:
        engine = make_engine(project)
        engine.update_model("m", 65536, base_url="http://127.0.0.1:9/v1")
        engine.on_session_start("s1")
        engine.should_compress(hermes_estimator("estimate_request_tokens_rough")(messages, system_prompt="sys", tools=None))
        activation.llm_request(request={"model": "m", "messages": messages, "max_tokens": 8000}, model="m",
                               base_url="http://127.0.0.1:9/v1")
        engine.handle_tool_call("baton_capture", {"kind": "decision", "item": {"decision": "d", "rationale": "r"}},
                                messages=messages)
        engine.handle_tool_call("baton_status", {}, messages=messages)
        result = engine.compress(messages)
        engine.handle_tool_call("baton_resume", {}, messages=messages)
        engine.get_status()
        engine.on_session_end("s1", result)
        assert engine.compression_count == 1
        return result


@pytest.mark.hermes
def test_engine_makes_no_connection_with_a_local_tokenizer(project: Path) -> None:
    with installed_runtime(TIKTOKEN_ENV), SocketGuard() as guard:
        engine_session(project)
    assert guard.refused == [] and guard.connections == []


@pytest.mark.hermes
def test_engine_connects_only_to_the_configured_tokenizer_url(project: Path) -> None:
    with FaultyServer("ok", count=50) as server:
        env = {"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": server.url}
        with installed_runtime(env), SocketGuard(allowed=[address_of(server.url)]) as guard:
            engine_session(project)
        assert server.requests_received >= 1
    assert guard.refused == []
    assert {(a.host, a.port) for a in guard.connections} == {address_of(server.url)}
