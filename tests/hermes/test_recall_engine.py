"""``baton_recall`` reads Hermes' own session store when Hermes binds it (``bind_session_state``): a copy of the
engine borrows the store, never its connection, and unbound, recall reads the in-process index again.

Recall from what a compaction took out, continuity and ranking are tested through a fake host
(``tests/agent_core/test_recall.py``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine

from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes


def _engine(project: Path) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block={"fresh_tail_tokens": 600, "brief_max_tokens": 1200}))


def _call(engine: BatonContextEngine, **args: Any) -> dict[str, Any]:
    return json.loads(engine.handle_tool_call("baton_recall", args))


def test_recall_reads_the_bound_session_store(project: Path, qwen3_env: Path, tmp_path: Path) -> None:
    from hermes_state import SessionDB

    db = SessionDB(tmp_path / "state.db")
    db.create_session("parent", source="cli")
    db.append_message("parent", role="user", content="The invoice id is INV-20931.")
    db.end_session("parent", "compression")
    db.create_session("child", source="cli", parent_session_id="parent")
    engine = _engine(project)
    engine.bind_session_state(session_db=db, session_id="child")
    assert copy.deepcopy(engine).recall_binding.session_db is db  # a copy borrows the store, never copies its connection
    assert engine.get_status()["recall"]["source"] == "hermes session store"
    hit = _call(engine, mode="search", query="INV-20931")["hits"][0]
    assert hit["role"] == "user" and "INV-20931" in hit["snippet"]
    engine.bind_session_state(session_db=None, session_id="child")
    assert _call(engine, mode="search", query="INV-20931")["hits"] == []  # the in-process index never saw it
    assert engine.get_status()["recall"]["source"] == "in-process index"
