"""Every record file the project writes (capture, store transitions, lineage) validates against the
published reference schema, read back from disk."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from baton_engine.handoff import capture, lineage
from baton_engine.handoff.store import HandoffStore, find_project_root, init_project

PAYLOAD = {
    "work": {"title": "Persist handoffs", "objective": "Atomic, locked record files",
             "scope": ["baton_engine/handoff"], "constraints": ["no network"], "definition_of_done": ["tests green"]},
    "summary": {"completed": ["ids", "config"], "current_state": "store written", "why_it_matters": "resume safely"},
    "decisions": [{"decision": "use filelock", "rationale": "inter-process", "evidence_ids": ["E-001"]}],
    "evidence": [{"type": "command", "claim": "tests pass", "ref": "pytest tests/store", "output": "95 passed"}],
    "failed_attempts": [{"attempt": "fcntl by hand", "outcome": "not portable"}],
    "open_items": [{"description": "lineage", "priority": "high", "suggested_action": "write lineage.py",
                    "acceptance_check": "pytest tests/store/test_lineage.py"}],
    "risks": [{"description": "NFS locks", "severity": "low"}],
    "artifacts": [{"path": "src/app.py", "role": "modified"}],
    "origin": {"harness": "generic", "session_id": "session-123", "actor": {"type": "agent", "name": "hermes"}},
}


def test_all_written_records_conform(tmp_path: Path, assert_conforms) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    init_project(tmp_path)
    store = HandoffStore(find_project_root(tmp_path))
    leaky = {**PAYLOAD, "summary": {**PAYLOAD["summary"],
                                    "current_state": "token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 in env"}}
    draft, redactions = capture.build_draft(leaky, tmp_path)
    assert redactions
    store.save(draft)
    store.transition(draft.id, "ready")
    fork_a = lineage.fork(store.load(draft.id), "a")
    fork_b = lineage.fork(store.load(draft.id), "b")
    for child in (fork_a, fork_b, lineage.continue_from(store.load(draft.id))):
        store.save(child)
    store.save(lineage.merge([fork_a, fork_b], "Resolution: keep both branches' work"))
    lineage.commit_amendment(store, store.load(draft.id), {"risks": []})
    files = sorted((tmp_path / ".baton" / "handoffs").glob("*.json"))
    assert len(files) == 6
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "ghp_A1b2" not in text
        assert_conforms(json.loads(text))
    statuses = sorted(entry.record.status for entry in store.list().entries)
    assert statuses == ["draft"] * 5 + ["superseded"]
