"""The REAL loop on the other API shapes (issue 30, item 6): Hermes' ``AIAgent`` on ``anthropic_messages`` and on
``codex_responses`` reads 14 large design files, two per turn of parallel ``read_file`` calls, through a 64,000
window, against a loopback server of that shape (``batontest.wire_server``) that validates every request with the
shape's validator (the providers' SDK types and pairing rules) and refuses like the provider (an invalid request;
prompt + cap over the window). Hermes' own compression is off (``compression.enabled: false``), so every request
whose history no longer fits is one Baton must shorten itself, in its shape (the emergency shortening): all files
read, 0 invalid requests, 0 overflows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import DRIVER, PROJECT_FILES, require_hermes
from batontest.model_server import Reply, ScriptedPolicy, ToolCall, filler_text
from batontest.wire_server import WireModelServer

pytestmark = pytest.mark.hermes

FILES = 14
FILE_WORDS = 3_000  # ~6k Qwen3 tokens per read_file result: 14 files are ~84k tokens through a 64,000 window
WINDOW = 64_000  # the smallest window Hermes 0.19 accepts
MAX_TOKENS = 8_192
FINAL_ANSWER = "Done: every design file is read."
MODELS = {"anthropic_messages": "claude-sonnet-4-5", "codex_responses": "gpt-5"}


def design_file(n: int) -> str:
    return f"DESIGN FILE d{n:02d} BEGIN\n{filler_text(f'd{n:02d}', FILE_WORDS)}\nDESIGN FILE d{n:02d} END\n"


def run(workdir: Path, shape: str) -> tuple[dict[str, Any], WireModelServer]:
    require_hermes()
    project = git_project(workdir / "project", {
        **PROJECT_FILES, **{f"docs/design_{n:02d}.md": design_file(n) for n in range(1, FILES + 1)}})
    baton_init(project)
    steps = [Reply(content=f"Reading design files {n} and {n + 1}.", tool_calls=tuple(
        ToolCall("read_file", {"path": str(project / f"docs/design_{k:02d}.md")}) for k in (n, n + 1)))
        for n in range(1, FILES + 1, 2)]
    with WireModelServer(shape, ScriptedPolicy(steps, final_answer=FINAL_ANSWER), context_window=WINDOW,
                         model_name=MODELS[shape]) as server:
        config = hermes_config(base_url=server.base_url, model=MODELS[shape], context_length=WINDOW,
                               max_tokens=MAX_TOKENS, baton={
                                   "tokenizer": {"backend": "hf", "path": str(qwen3_dir())},
                                   "auto_checkpoint_on_end": False})
        config["compression"] = {"enabled": False}
        home = write_hermes_home(workdir / "hermes-home", config)
        spec = {"base_url": server.base_url, "model": MODELS[shape], "api_mode": shape,
                "max_iterations": FILES + 10, "turns": ["Read every design file under docs/."],
                "toolsets": ["file"]}
        (workdir / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        done = subprocess.run([sys.executable, str(DRIVER), str(workdir / "spec.json"), str(workdir / "out.json")],
                              cwd=project, env=hermes_env(home), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((workdir / "out.json").read_text(encoding="utf-8")), server


@pytest.mark.parametrize("shape", list(MODELS))
def test_every_file_is_read_with_no_invalid_request_and_no_overflow(tmp_path: Path, shape: str) -> None:
    result, server = run(tmp_path, shape)
    main = server.main_requests
    print(f"\n[{shape}] main={len(main)} prompts={[r.prompt_tokens for r in main]} "
          f"caps={[r.output_budget for r in main]} other={server.other_paths} status="
          f"{result['status'].get('output_budget')}")
    assert server.invalid == []
    assert not server.rejections, [(r.index, r.rejection) for r in server.rejections]
    assert result["turns"][0]["final_response"] == FINAL_ANSWER
    # every file's content reached the model (in the request right after the call that read it)
    seen = "\n".join(json.dumps(r.messages) for r in main)
    assert all(f"DESIGN FILE d{n:02d} END" in seen for n in range(1, FILES + 1))
    # the history outgrew the window: Baton shortened requests itself, and each fits with its cap
    assert result["status"]["output_budget"]["requests_shortened"] >= 1
    assert all(r.prompt_tokens + r.output_budget <= WINDOW for r in main)
    assert max(len(json.dumps(r.messages)) for r in main) < sum(len(design_file(n)) for n in range(1, FILES + 1))
