"""The recall loop's session: the REAL Hermes ``AIAgent`` (``driver.py`` in a subprocess) reads design files with
its own ``read_file`` tool, a low trigger compacts every few files, then a scripted model asks ``baton_recall``.

Why shared: the recall loop of ``tests/hermes_e2e`` (a loopback embedder) and of ``tests/vllm`` (the embedder
served by a real vLLM server) drive the same session and read its requests the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import DRIVER, MODEL, PROJECT_FILES, WINDOW, require_hermes
from batontest.model_server import (ModelServer, RecordedRequest, Reply, ScriptedPolicy, ToolCall, filler_text,
                                    recall_steps)

FILES = 14
FILE_WORDS = 1_300  # ~2.5k Qwen3 tokens per read_file result
TRIGGER = 20_000  # half of it (the post-compaction aim) leaves room for a whole in-flight file
NEEDLE = "9f3c2a7b41d8e6f0"
NEEDLE_LINE = f"RELEASE CHECKSUM of bundle inventory-2.4.1: {NEEDLE} (verified by the release job)"
FINAL_ANSWER = "Done: the release checksum is recovered."


def design_file(n: int, needle_in: int = 1, needle_line: str = NEEDLE_LINE) -> str:
    body = filler_text(f"d{n:02d}", FILE_WORDS).split("\n")
    if n == needle_in:  # the needle sits in the middle of one file, nowhere else
        body.insert(len(body) // 2, needle_line)
    return f"DESIGN FILE d{n:02d} BEGIN\n" + "\n".join(body) + f"\nDESIGN FILE d{n:02d} END\n"


def last_tool_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON answer of the newest tool result in a request (what the scripted model reads)."""
    tool = [m for m in body["messages"] if m.get("role") == "tool"][-1]
    return json.loads(tool["content"])


def script(project: Path, files: int = FILES, recall: Sequence[Any] | None = None) -> ScriptedPolicy:
    steps: list[Any] = [Reply(content=f"Reading design file {n}.", tool_calls=(
        ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),)) for n in range(1, files + 1)]
    steps += recall if recall is not None else recall_steps(NEEDLE, budget_tokens=120)
    return ScriptedPolicy(steps, final_answer=FINAL_ANSWER)


def run(workdir: Path, *, in_place: bool, session_db: bool, files: int = FILES, trigger: int = TRIGGER,
        needle_in: int = 1, baton: dict[str, Any] | None = None,
        toolsets: Sequence[str] = ("file", "context_engine"),
        system_prompt: str | None = None, needle_line: str = NEEDLE_LINE,
        recall: Sequence[Any] | None = None) -> tuple[dict[str, Any], ModelServer, Path]:
    require_hermes()
    project = git_project(workdir / "project", {
        **PROJECT_FILES,
        **{f"docs/design_{n:02d}.md": design_file(n, needle_in, needle_line) for n in range(1, files + 1)}})
    baton_init(project)
    with ModelServer(script(project, files, recall), context_window=WINDOW) as server:
        config = hermes_config(base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=WINDOW,
                               baton={"fallback_token_threshold": trigger, "auto_checkpoint_on_end": False,
                                      **(baton or {})})
        config["compression"] = {"in_place": in_place}
        home = write_hermes_home(workdir / "hermes-home", config)
        spec = {"base_url": server.base_url, "model": MODEL, "max_iterations": files + 10,
                "turns": ["Read every design file under docs/, then find the release checksum."],
                "toolsets": list(toolsets), "session_db": session_db, "system_prompt": system_prompt}
        (workdir / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        done = subprocess.run([sys.executable, str(DRIVER), str(workdir / "spec.json"), str(workdir / "out.json")],
                              cwd=project, env=hermes_env(home), capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((workdir / "out.json").read_text(encoding="utf-8")), server, project


def compaction_boundaries(main: Sequence[RecordedRequest]) -> list[int]:
    """Main requests whose messages do not extend the previous request's: a compaction rewrote the history."""
    return [i for i in range(1, len(main)) if main[i].messages[: len(main[i - 1].messages)] != main[i - 1].messages]


def recall_call_request(main: Sequence[RecordedRequest], mode: str) -> int:
    """Index of the main request the model answered with a ``baton_recall`` call of ``mode``."""
    return next(i for i, r in enumerate(main) if r.reply and any(
        c.name == "baton_recall" and c.arguments.get("mode") == mode for c in r.reply.tool_calls))
