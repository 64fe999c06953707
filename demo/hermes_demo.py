"""Demo: the REAL Hermes agent loop with Baton as its context engine, offline, in about a minute.

What runs: hermes-agent's ``AIAgent`` (the same loop as the ``hermes`` CLI) talks to a bundled local
model stand-in (``tests/batontest/model_server.py``: an OpenAI-compatible server that plays a
scripted, tool-heavy session and counts every prompt with the real Qwen3 tokenizer). Baton is
enabled exactly as a user enables it (``plugins.enabled: [baton]`` + ``context.engine: baton`` in
config.yaml) and counts with the hf backend on the same Qwen3 tokenizer. The demo prints, per
model call, the prompt tokens the provider saw against the window and the output budget Baton
clamped; each compaction with its handoff file; a ``baton_recall`` of a line from the first round,
long compacted away (query, hit, the line back); and the resume brief a new session would get.
Everything lives in a temporary directory that is removed at the end: the demo leaves nothing behind unless
``--report PATH`` asks for the session's HTML report there.

``--compare`` then runs the same scripted session under Hermes' built-in compressor (``context.engine``
left at its default, no Baton plugin, the same model stand-in answering its summary calls) in a second
process (Hermes reads ``HERMES_HOME`` at import) and prints both outcomes side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # batontest: the model stand-in, Hermes home helpers, tokenizer assets

from rich.console import Console  # noqa: E402
from rich.panel import Panel  # noqa: E402
from rich.rule import Rule  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from batontest.assets import qwen3_dir  # noqa: E402
from batontest.hermes_home import (  # noqa: E402
    HERMES_OFFLINE_ENV,
    baton_init,
    git_project,
    hermes_config,
    write_hermes_home,
)
from batontest.model_server import (  # noqa: E402
    ModelServer,
    RecordedRequest,
    ScriptedPolicy,
    recall_steps,
    tool_heavy_script,
)

MODEL = "qwen3-local"
WINDOW = 65_536
OUTPUT_DEFAULT = 65_536  # the custom-provider default that overflows without Baton's clamp
HAND_CAP = 4_096  # --compare: the model.max_tokens a user sets by hand once the built-in's requests are refused
THRESHOLD = 15_000  # baton.fallback_token_threshold: early, so the demo shows several cycles; above the floor of
# this small frame (todo + Baton tools: twice frame + block + tail + unanswered share, ~14.2k; docs/compaction.md)
ROUNDS = 20  # with the compacted request at half the trigger, a compaction every ~6 model calls
REQUEST = "Audit the inventory service logs round by round and keep the task list current."
FOLLOW_UP = "Thanks. What is left to do?"
RECALL_QUERY = "r1i0 L003"  # a log line of round 1's first task: compacted away long before the recall
BUILTIN = "hermes-builtin"

console = Console(file=sys.__stdout__, highlight=False)


@dataclass(frozen=True)
class Outcome:
    """What one run of the scripted session came to, read from the model server's records and the engine."""

    arm: str
    trigger: int  # the request size at which the engine compacts
    model_calls: int  # main (streaming) requests the server received
    peak_prompt: int  # the largest prompt the server counted
    refused: int  # requests the server refused (over the window, broken tool pairing)
    compactions: int
    summary_calls: int  # auxiliary (non-streaming) LLM calls: Hermes' summaries; Baton makes none
    line_in_final_request: bool  # the round-1 line verbatim in the last request the model got
    line_recalled: bool  # a baton_recall answer carrying the line reached the model
    answered: bool  # the model's last request was answered (the session ran to its end)


class Narrator:
    """Prints one line per model call, and each compaction as soon as the next call shows its effect."""

    def __init__(self, builtin: bool = False) -> None:
        self.engine: Any = None
        self.builtin = builtin
        self.seen_compactions = 0
        self.calls = 0

    def on_request(self, request: RecordedRequest) -> None:
        if not request.stream:  # auxiliary calls (titles) are not part of the main loop
            return
        self.report_compactions()
        self.calls += 1
        tokenizer = self.tokenizer_label()
        names = [c.name for c in request.reply.tool_calls] if request.reply else []
        called = " ".join(f"{n} x{names.count(n)}" if names.count(n) > 1 else n for n in dict.fromkeys(names))
        rejected = "" if request.status == 200 else f"  [red]REJECTED: {request.rejection}[/]"
        prompt = request.prompt_tokens or 0
        console.print(f"  #{self.calls:<3} prompt [bold]{prompt:>6,}[/]/{WINDOW:,}  out {request.output_budget:>6,}"
                      f"  {tokenizer}  -> {called or 'answer'}{rejected}")

    def tokenizer_label(self) -> str:
        if self.engine is None or self.builtin:
            return ""
        tokenizer = self.engine.get_status().get("tokenizer") or {}
        exact = "exact" if tokenizer.get("exact") else "estimate"
        return f"[cyan]{exact} {tokenizer.get('source', '?')}[/]"

    def report_compactions(self) -> None:
        if self.engine is None or self.engine.compression_count == self.seen_compactions:
            return
        self.seen_compactions = self.engine.compression_count
        if self.builtin:
            console.print(f"  [bold magenta]compaction {self.seen_compactions}[/]: Hermes' LLM summary")
            return
        status = self.engine.get_status()
        handoff = status.get("latest_handoff") or {}
        console.print(
            f"  [bold magenta]compaction {self.seen_compactions}[/]: handoff {handoff.get('short_id')} "
            f"({handoff.get('status')})\n      {status.get('latest_handoff_path')}"
        )


def run(workdir: Path, *, builtin: bool = False, max_tokens: int = OUTPUT_DEFAULT,
        report: Path | None = None) -> tuple[int, Outcome]:
    """The scripted session in the real loop, with Baton (or, ``builtin``, Hermes' own compressor);
    ``max_tokens`` is config.yaml's ``model.max_tokens``; ``report``: where Baton's session report is written."""
    project = git_project(workdir / "inventory-service", {
        "README.md": "# inventory service\n", "src/parser.py": "def parse(line):\n    return line.split()\n"})
    if not builtin:
        baton_init(project)
    narrator = Narrator(builtin)
    policy = ScriptedPolicy([*tool_heavy_script(ROUNDS, capture_every=4), *recall_steps(RECALL_QUERY)],
                            final_answer="Done: every round is recorded; the latency benchmark is still open.")
    with ModelServer(policy, context_window=WINDOW, model_name=MODEL, on_request=narrator.on_request) as server:
        engine = {"engine": "compressor", "plugins_enabled": ()} if builtin else {
            "baton": {"tokenizer": {"backend": "hf", "path": str(qwen3_dir())},
                      "fallback_token_threshold": THRESHOLD, "auto_checkpoint_on_end": False}}
        home = write_hermes_home(workdir / "hermes-home", hermes_config(
            base_url=server.base_url, model=MODEL, context_length=WINDOW, max_tokens=max_tokens, **engine))
        os.environ.update(HERMES_OFFLINE_ENV)
        os.environ["HERMES_HOME"] = str(home)  # before the first Hermes import: Hermes reads it at import time
        os.chdir(project)
        console.print(Rule("Hermes' built-in compressor, the same session" if builtin
                           else "Baton + the real Hermes agent loop"))
        console.print(f"model stand-in: {server.base_url} ({MODEL}, window {WINDOW:,}, Qwen3 tokenizer)")
        if builtin:
            console.print(f"config.yaml: context.engine compressor (the default), no plugins, "
                          f"model.max_tokens {max_tokens:,}\n")
        else:
            console.print(f"config.yaml: context.engine baton, plugins.enabled \\[baton], "
                          f"model.max_tokens {OUTPUT_DEFAULT:,},"
                          f" baton.fallback_token_threshold {THRESHOLD:,}")
            console.print(f"project: {project} (git, `baton init` done)\n")
        with contextlib.redirect_stdout(io.StringIO()):  # Hermes' own spinner lines; the narrator speaks instead
            from run_agent import AIAgent

            agent = AIAgent(base_url=server.base_url, api_key="sk-local", provider="custom", model=MODEL,
                            quiet_mode=True, skip_context_files=True, skip_memory=True,
                            enabled_toolsets=["todo", "context_engine"], max_iterations=60, tool_delay=0.0,
                            max_tokens=max_tokens)  # what the hermes CLI passes from model.max_tokens
        narrator.engine = agent.context_compressor
        console.print(f"context engine: [bold]{type(agent.context_compressor).__name__}[/] "
                      f"(name {agent.context_compressor.name!r})")
        if not builtin:
            console.print(f"per model call: prompt tokens the provider saw / window, and the output budget (out) "
                          f"Baton clamped from the configured {OUTPUT_DEFAULT:,}\n")
        history = None
        for turn, message in enumerate((REQUEST, FOLLOW_UP), start=1):
            console.print(f"[bold]user turn {turn}:[/] {message}")
            with contextlib.redirect_stdout(io.StringIO()):
                result = agent.run_conversation(message, conversation_history=history)
            history = result["messages"]
            narrator.report_compactions()
            console.print(f"[bold]assistant:[/] {result.get('final_response')}\n")
        if not builtin:
            trigger = agent.context_compressor.get_status()["trigger"]
            console.print(f"trigger {trigger['tokens']:,} request tokens; the smallest workable one for this request's "
                          f"fixed part (system prompt + tool schemas) is {trigger['floor']:,}"
                          + (" (the setting was raised to it)" if trigger["raised"] else "") + "\n")
        with contextlib.redirect_stdout(io.StringIO()):
            agent.shutdown_memory_provider(history)
        arm = "baton" if not builtin else f"{BUILTIN}, max_tokens {max_tokens:,}"
        outcome = observe(arm, server, narrator)
    if builtin:
        return 0, outcome
    # the model read the recall answers in its next requests (the last compaction took them out of history)
    recalled = show_recall([m for request in server.main_requests for m in request.messages])
    code = summarize(project, narrator, outcome.refused) or (0 if recalled else 1)
    return code or (0 if report is None or write_report(project, report) else 1), outcome


def write_report(project: Path, target: Path) -> bool:
    """``baton report`` of the session just run, written outside the demo's temporary directory."""
    from baton_engine.operations.maintenance import report
    from baton_engine.results import call

    result, _code = call(report, project, html=target)
    if not result.get("ok"):
        console.print(f"[red]baton report failed: {result.get('error')}[/]")
        return False
    summary = result["summary"]
    console.print(f"session report ({summary['requests']} requests, {summary['compactions']} compactions; "
                  f"open it in a browser): {result['html']}")
    return True


def observe(arm: str, server: ModelServer, narrator: Narrator) -> Outcome:
    """The run's outcome from what the model server recorded (and the engine's compaction count)."""
    main = server.main_requests
    final = main[-1] if main else None
    recalled = any(RECALL_QUERY in str(m.get("content")) and _is_recall_answer(m)
                   for request in main for m in request.messages if m.get("role") == "tool")
    engine = narrator.engine
    trigger = engine.limits().trigger if hasattr(engine, "limits") else engine.threshold_tokens
    return Outcome(arm=arm, trigger=int(trigger), model_calls=len(main),
                   peak_prompt=max((r.prompt_tokens or 0 for r in main), default=0), refused=len(server.rejections),
                   compactions=narrator.seen_compactions, summary_calls=len(server.auxiliary_requests),
                   line_in_final_request=final is not None and RECALL_QUERY in json.dumps(final.messages),
                   line_recalled=recalled, answered=final is not None and final.status == 200)


def _is_recall_answer(message: dict[str, Any]) -> bool:
    try:
        answer = json.loads(str(message.get("content")))
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("mode") in ("search", "expand") and bool(answer.get("ok"))


def show_recall(sent: list[dict[str, Any]]) -> bool:
    """The model's two ``baton_recall`` answers (search, then expand) as the provider received them: query,
    first hit, the line back."""
    answers = []
    for message in sent:
        if message.get("role") == "tool":
            try:
                answer = json.loads(str(message.get("content")))
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("mode") in ("search", "expand"):
                answers.append(answer)
    search = next((a for a in answers if a.get("mode") == "search" and a.get("hits")), None)
    expand = next((a for a in answers if a.get("mode") == "expand" and a.get("ok")), None)
    console.print(Rule("Recall after the compactions"))
    if search is None or expand is None:
        console.print(f"[red]baton_recall found nothing for {RECALL_QUERY!r}[/]")
        return False
    hit = search["hits"][0]
    line = next((x for x in expand["text"].split("\n") if RECALL_QUERY in x), "")
    console.print(f"baton_recall search {RECALL_QUERY!r}: {len(search['hits'])} hits; first {hit['ref']} "
                  f"({hit['role']} of {hit['tool_name']}, {hit['tokens']} tokens), snippet:")
    console.print(Text(hit["snippet"][:160]))  # Text(): tool output is not rich markup
    console.print(f"baton_recall expand (lines {expand['first_line']}-{expand['last_line']} of "
                  f"{expand['total_lines']}, {expand['tokens']} tokens), the line back:")
    console.print(Text(line.strip()))
    return bool(line)


def summarize(project: Path, narrator: Narrator, rejected: int) -> int:
    from baton_engine.operations.handoffs import resume
    from baton_engine.results import call

    console.print(Rule("Result"))
    files = sorted((project / ".baton" / "handoffs").glob("*.json"))
    records = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    handoffs = [r for r in records if (r.get("automation") or {}).get("trigger") == "pre_compaction"]
    statuses = Counter(r["status"] for r in handoffs)
    console.print(f"{narrator.seen_compactions} compactions -> {len(handoffs)} handoff records "
                  f"({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}); "
                  f"{len(records) - len(handoffs)} other records "
                  "(baton_capture session drafts, archived once folded in)")
    console.print(f"{rejected} requests rejected by the strict model server (window or tool-pairing violations)")
    resumed, _code = call(resume, project)
    if not resumed.get("ok"):
        console.print(f"[red]baton resume failed: {resumed.get('error')}[/]")
        return 1
    brief = resumed["brief"]
    text = brief.get("text") if isinstance(brief, dict) else str(brief)
    tokens = brief.get("tokens") if isinstance(brief, dict) else None
    title = f"resume brief of {resumed['handoff'].get('short_id')}" + (f" ({tokens} tokens)" if tokens else "")
    # Text(): the brief is plain text, so "[medium]" must not be read as rich markup
    console.print(Panel(Text(text or ""), title=title, subtitle="what `baton resume` hands the next session"))
    return 0 if rejected == 0 and narrator.seen_compactions >= 3 else 1


def compare(baton: Outcome, workdir: Path) -> int:
    """The built-in compressor's runs, each in its own process (the same config.yaml, then with the output
    cap set by hand so its requests are not refused), then every outcome side by side."""
    outcomes = [baton]
    for cap in (OUTPUT_DEFAULT, HAND_CAP):
        path = workdir / f"builtin-{cap}.json"
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--builtin-outcome", str(path),
                               "--builtin-cap", str(cap)], cwd=REPO, timeout=900, check=False)
        if done.returncode != 0 or not path.is_file():
            console.print(f"[red]the built-in compressor's run failed (exit {done.returncode})[/]")
            return 1
        outcomes.append(Outcome(**json.loads(path.read_text(encoding="utf-8"))))
    console.print(Rule("Side by side: the same scripted session"))
    table = Table()
    table.add_column("")
    for outcome in outcomes:
        table.add_column(outcome.arm)
    rows = [("compacts at (request tokens)", "trigger"), ("model calls", "model_calls"),
            ("largest prompt", "peak_prompt"), ("requests refused by the server", "refused"),
            ("compactions", "compactions"), ("LLM calls for summaries", "summary_calls"),
            (f"round-1 line {RECALL_QUERY!r} in the final request", "line_in_final_request"),
            (f"round-1 line {RECALL_QUERY!r} recalled by the model", "line_recalled"),
            ("last request answered", "answered")]
    for label, key in rows:
        table.add_row(label, *(_cell(getattr(outcome, key)) for outcome in outcomes))
    console.print(table)
    return 0


def _cell(value: Any) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true",
                        help="then run the same session under Hermes' built-in compressor and compare")
    parser.add_argument("--report", type=Path, default=None,
                        help="also write Baton's HTML session report to this file (default: none; the demo leaves "
                             "nothing behind)")
    parser.add_argument("--builtin-outcome", type=Path, help=argparse.SUPPRESS)  # the compare run's child
    parser.add_argument("--builtin-cap", type=int, default=OUTPUT_DEFAULT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="baton-demo-") as tmp:
        cwd = Path.cwd()
        try:
            if args.builtin_outcome is not None:
                _code, outcome = run(Path(tmp), builtin=True, max_tokens=args.builtin_cap)
                args.builtin_outcome.write_text(json.dumps(asdict(outcome)), encoding="utf-8")
                return 0
            code, outcome = run(Path(tmp), report=args.report.resolve() if args.report is not None else None)
            os.chdir(cwd)
            return (compare(outcome, Path(tmp)) if args.compare else 0) or code
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    raise SystemExit(main())
