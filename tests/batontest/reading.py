"""The reading session: the real Hermes ``AIAgent`` reads large project files with its own ``read_file`` tool.

Why shared: the request-budget loop (against the loopback server) and the vLLM oracle loop (against a real
vLLM server) run the same tool-heavy, multi-compaction session — design files of ~12k Qwen3 tokens each, one
``read_file`` call per file, through a window several files wide — and check the same things afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import DRIVER, MODEL, PROJECT_FILES, require_hermes
from batontest.model_server import ModelServer, RecordedRequest, Reply, ScriptedPolicy, ToolCall, filler_text

FILE_WORDS = 6_400  # ~402 lines, ~48k chars: ~12.3k Qwen3 tokens as read_file returns it (line numbers)
FINAL_ANSWER = "Done: every design file is read."
TURNS = ("Read every design file under docs/ one by one and note what each one specifies.",
         "Thanks. Summarise what the design files cover.")


def design_file(n: int, words: int = FILE_WORDS) -> str:
    """File ``n``: a first and a last line only it has, around deterministic prose (``FILE_WORDS``: ~12k
    tokens)."""
    return f"DESIGN FILE d{n:02d} BEGIN\n{filler_text(f'd{n:02d}', words)}\nDESIGN FILE d{n:02d} END\n"


def design_files(count: int, words: int = FILE_WORDS) -> dict[str, str]:
    return {f"docs/design_{n:02d}.md": design_file(n, words) for n in range(1, count + 1)}


def reading_script(project: Path, count: int) -> ScriptedPolicy:
    """One ``read_file`` call per design file (absolute path), then the final answer."""
    steps = [Reply(content=f"Reading design file {n}.",
                   tool_calls=(ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),))
             for n in range(1, count + 1)]
    return ScriptedPolicy(steps, final_answer=FINAL_ANSWER)


def run_reading(workdir: Path, server: ModelServer, *, files: int, context_length: int, max_tokens: int | None,
                baton: Mapping[str, Any], turns: Sequence[str] = TURNS, timeout: float = 240,
                file_words: int = FILE_WORDS, hermes: Mapping[str, Any] | None = None,
                switches: Sequence[Mapping[str, Any]] = (),
                toolsets: Sequence[str] = ("file", "context_engine"),
                session_db: bool = False) -> tuple[dict[str, Any], Path, float]:
    """``batontest.hermes_run.run_scenario`` with the design files in the project and Hermes' ``file`` toolset;
    returns (driver output, Hermes home, wall seconds of the agent run). The project is ``workdir/project``;
    ``hermes`` adds top-level config.yaml sections (e.g. 0.22's ``agent.minimum_tool_context_length``);
    ``switches`` are ``/model`` before turns (the driver calls ``AIAgent.switch_model``; each turn's status is
    in the output); ``toolsets`` Hermes' toolsets the agent gets (``vision`` for its auxiliary vision calls);
    ``session_db``: the agent gets ``$HERMES_HOME/state.db``, as the hermes CLI and gateway give it."""
    require_hermes()
    home = write_hermes_home(workdir / "hermes-home", {**hermes_config(
        base_url=server.base_url, model=MODEL, context_length=context_length, max_tokens=max_tokens, baton=baton),
        **(hermes or {})})
    project = git_project(workdir / "project", {**PROJECT_FILES, **design_files(files, file_words)})
    baton_init(project)
    spec_path, out_path = workdir / "spec.json", workdir / "out.json"
    spec = {"base_url": server.base_url, "model": MODEL, "turns": list(turns), "max_iterations": files + 10,
            "toolsets": list(toolsets), "switches": [dict(switch) for switch in switches], "session_db": session_db}
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(DRIVER), str(spec_path), str(out_path)], cwd=project,
                          env=hermes_env(home), capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out_path.read_text(encoding="utf-8")), home, wall


def files_never_seen(requests: Sequence[RecordedRequest], files: int) -> list[int]:
    """Design files whose full read_file result (first and last line) is in none of ``requests``."""
    missing = []
    for n in range(1, files + 1):
        begin, end = f"DESIGN FILE d{n:02d} BEGIN", f"DESIGN FILE d{n:02d} END"
        if not any(m.get("role") == "tool" and begin in str(m.get("content")) and end in str(m.get("content"))
                   for r in requests for m in r.messages):
            missing.append(n)
    return missing


def request_map(requests: Sequence[RecordedRequest], files: int) -> str:
    """One line per request: index, status, prompt tokens, message roles with the design files they carry."""
    lines = []
    for r in requests:
        tags = []
        for m in r.messages:
            content = str(m.get("content"))
            carried = [n for n in range(1, files + 1) if f"DESIGN FILE d{n:02d} BEGIN" in content]
            tags.append(str(m.get("role"))[0] + "".join(f"{n}" for n in carried))
        lines.append(f"#{r.index} status={r.status} prompt={r.prompt_tokens} cap={r.output_budget} "
                     f"[{' '.join(tags)}]")
    return "\n".join(lines)
