"""A loopback OpenAI-compatible model server for driving the REAL Hermes agent loop offline.

Why: the end-to-end tests and the demo need a provider that behaves like a strict real one
(vLLM, OpenAI) without weights or a network: it streams SSE chunks the way the OpenAI SDK
expects (role, content or tool-call deltas, finish, a usage-only chunk, ``[DONE]``), answers
non-streaming auxiliary calls, reports ``usage.prompt_tokens`` counted with a REAL tokenizer
(Qwen3 through the hf backend, on the request's messages + tools), and rejects with 400 what a
strict server rejects: prompt + output budget above the window, orphan tool messages, and
assistant tool calls left without results. Every request is recorded for assertions. The judge
(count and refusal) is ``ModelServer.admit``; ``batontest.vllm_oracle.VllmOracle`` makes a REAL vLLM
server the judge, so Baton's renderer is not the only one that checks Baton's counts.

    policy = ScriptedPolicy(tool_heavy_script(6))
    with ModelServer(policy, context_window=65536) as server:
        ...  # point Hermes at server.base_url
        assert not server.rejections

The model's behaviour is a policy: a function of the request body returning a ``Reply``
(deterministic). ``ScriptedPolicy`` plays a fixed list of replies, one per main (streaming)
request, then answers with its final text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batontest.conversation_tap import CONVERSATION_HEADER
from batontest.loopback import JsonHandler, LoopbackServer

DEFAULT_MODEL_NAME = "qwen3-local"
FIXED_CREATED = 1_764_000_000  # deterministic "created" timestamps
ROLES = {"system", "developer", "user", "assistant", "tool"}


@dataclass(frozen=True)
class ToolCall:
    """One function call the scripted model makes."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What the model answers to one request: text, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # faults a provider shows: ``cut`` ends the reply with finish_reason "length" (cut at max_tokens);
    # ``usage`` False sends no usage at all; ``junk`` puts a chunk that is not JSON into the stream (the client's
    # SDK fails the attempt and Hermes retries it)
    cut: bool = False
    usage: bool = True
    junk: bool = False

    @property
    def finish_reason(self) -> str:
        return "length" if self.cut else "tool_calls" if self.tool_calls else "stop"


Policy = Callable[[dict[str, Any]], Reply]


@dataclass
class RecordedRequest:
    """One request as the server received it, with what it decided."""

    index: int
    path: str
    stream: bool
    main: bool
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int | None
    max_completion_tokens: int | None
    prompt_tokens: int | None = None
    status: int = 200
    rejection: str | None = None
    reply: Reply | None = None
    conversation: str | None = None  # the conversation Hermes sent it for (``conversation_tap``), when tapped

    @property
    def output_budget(self) -> int:
        """The output cap the client asked for (0 when it sent none)."""
        return self.max_completion_tokens or self.max_tokens or 0

    @property
    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name")) for t in self.tools if isinstance(t, dict)]


Step = Reply | Callable[[dict[str, Any]], Reply]


def is_main(body: dict[str, Any]) -> bool:
    """A request of the agent's own loop: streamed, or carrying the agent's tools (Hermes 0.22 retries a failed
    stream without streaming); auxiliary calls (titles, summaries) are neither."""
    return bool(body.get("stream")) or bool(body.get("tools"))


class ScriptedPolicy:
    """Plays ``steps`` in order, one per main request; afterwards always answers ``final_answer``.

    A step is a ``Reply`` or a function of the request body returning one (a model that reacts to what a
    tool answered, e.g. expands the ref a ``baton_recall`` search returned). Auxiliary (non-streaming)
    requests never advance the script: they get ``auxiliary_answer``.
    """

    def __init__(self, steps: Sequence[Step], *, final_answer: str = "All steps are done.",
                 auxiliary_answer: str = "Scripted auxiliary answer") -> None:
        self.steps = list(steps)
        self.final_answer = final_answer
        self.auxiliary_answer = auxiliary_answer
        self.position = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not is_main(body):
            return Reply(content=self.auxiliary_answer)
        with self._lock:
            if self.position < len(self.steps):
                step = self.steps[self.position]
                self.position += 1
                return step if isinstance(step, Reply) else step(body)
        return Reply(content=self.final_answer)


def filler_text(seed: str, words: int) -> str:
    """Deterministic tool-log-like prose (``words`` words), different for every seed."""
    vocabulary = (
        "parser cache request handler retry module build test fixture schema token budget window "
        "migration config loader index query latency commit branch review patch import error warning "
        "timeout socket worker queue batch record field column release deploy metric trace span"
    ).split()
    out: list[str] = []
    counter = 0
    while len(out) < words:
        digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        out.extend(vocabulary[b % len(vocabulary)] for b in digest[:16])
        counter += 1
    lines = [" ".join(out[i : i + 16]) for i in range(0, words, 16)]
    return "\n".join(f"{seed} L{n:03d}: {line}" for n, line in enumerate(lines))


def todo_round(round_no: int, *, items: int = 3, words_per_item: int = 160, planted: str | None = None) -> Reply:
    """A ``todo`` write with bulky item texts: the tool result echoes all of it back (tool-heavy).

    ``planted`` (e.g. a fake credential) goes into the first item and the assistant's own text,
    the way a pasted config excerpt travels through a real session.
    """
    todos = []
    for i in range(items):
        text = f"Round {round_no} task {i}: analyse findings\n" + filler_text(f"r{round_no}i{i}", words_per_item)
        if planted and i == 0:
            text += f"\nconfig excerpt: {planted}"
        status = "in_progress" if i == 0 else "completed"
        todos.append({"id": f"r{round_no}-t{i}", "content": text, "status": status})
    content = f"Recording the findings of round {round_no}."
    if planted:
        content += f" The config excerpt reads: {planted}"
    return Reply(content=content, tool_calls=(ToolCall("todo", {"todos": todos, "merge": False}),))


DECISIONS = (  # a different decision each capture: one text five times read as a broken brief (issue 31)
    ("keep the parser cache keyed by request hash", "the hash is stable across retries"),
    ("retry the loader twice before failing the batch", "its timeouts are transient"),
    ("log worker queue timeouts at warning level", "they are expected under load"),
    ("pin the index migration to the release branch", "main has an unreviewed column change"),
    ("split the deploy metric by queue", "one busy queue hid the others' latency"),
)


def capture_call(round_no: int, nth: int = 0) -> Reply:
    """Two parallel ``baton_capture`` calls (a decision and an open item), as an agent would record them;
    ``nth``: the how-manyth capture of the session (picks the decision)."""
    decided, why = DECISIONS[nth % len(DECISIONS)]
    decision = {"kind": "decision", "item": {"decision": f"Round {round_no}: {decided}", "rationale": why}}
    open_item = {"kind": "open_item", "item": {
        "description": f"Round {round_no}: re-run the latency benchmark after the patch",
        "priority": "medium", "suggested_action": "run the benchmark script",
        "acceptance_check": "p95 latency is within 5% of the previous run"}}
    return Reply(content=f"Capturing the state after round {round_no}.",
                 tool_calls=(ToolCall("baton_capture", decision), ToolCall("baton_capture", open_item)))


def tool_heavy_script(rounds: int, *, planted: Sequence[str] = (), capture_every: int = 0,
                      words_per_item: int = 160) -> list[Reply]:
    """``rounds`` bulky todo rounds (round n carries ``planted[(n-1) % len]`` when given), and a
    pair of ``baton_capture`` calls after every ``capture_every`` rounds."""
    steps: list[Reply] = []
    for n in range(1, rounds + 1):
        secret = planted[(n - 1) % len(planted)] if planted else None
        steps.append(todo_round(n, planted=secret, words_per_item=words_per_item))
        if capture_every and n % capture_every == 0:
            steps.append(capture_call(n, n // capture_every - 1))
    return steps


def recall_steps(query: str, *, budget_tokens: int = 120) -> list[Step]:
    """Two model turns: a ``baton_recall`` search for ``query``, then an expand of the first hit's ref around
    its line (read from the search answer the request carries, as a model would)."""

    def expand_first_hit(body: dict[str, Any]) -> Reply:
        tool = [m for m in body.get("messages") or [] if m.get("role") == "tool"][-1]
        try:
            answer = json.loads(tool["content"])
        except ValueError:  # no baton_recall here (Hermes' built-in compressor): the tool error in plain text
            answer = {}
        hits = (answer.get("hits") if isinstance(answer, dict) else None) or [{"ref": "msg-none", "line": 1}]
        return Reply(content="Paging the hit back in.", tool_calls=(ToolCall("baton_recall", {
            "mode": "expand", "ref": hits[0]["ref"], "around": hits[0]["line"], "budget_tokens": budget_tokens}),))

    search = Reply(content="Searching the compacted context.", tool_calls=(
        ToolCall("baton_recall", {"mode": "search", "query": query}),))
    return [search, expand_first_hit]


class PromptCounter:
    """Counts a chat request with the hf backend on a real tokenizer (Qwen3 by default)."""

    def __init__(self, tokenizer_dir: str | Path | None = None) -> None:
        from baton_engine.tokens.contract import TokenizerConfig
        from baton_hf.backend import HfBackend

        if tokenizer_dir is None:
            from batontest.assets import qwen3_dir

            tokenizer_dir = qwen3_dir()
        self.backend = HfBackend.from_config(TokenizerConfig(backend="hf", path=str(tokenizer_dir)))

    def __call__(self, body: dict[str, Any]) -> int:
        request: dict[str, Any] = {"messages": body.get("messages") or []}
        if body.get("tools"):
            request["tools"] = body["tools"]
        if isinstance(body.get("chat_template_kwargs"), dict):
            request["chat_template_kwargs"] = body["chat_template_kwargs"]
        count = self.backend.count_chat(request)
        if count.tokens is None:
            raise ValueError("the tokenizer could not count this request")
        return count.tokens


@functools.cache
def shared_prompt_counter(tokenizer_dir: str | None) -> PromptCounter:
    """One loaded tokenizer per directory per process (loading costs ~0.5 s; the backend is thread-safe)."""
    return PromptCounter(tokenizer_dir)


def protocol_problem(messages: Sequence[Any]) -> str | None:
    """What a strict server (OpenAI, vLLM) rejects in a message list, or None when valid."""
    if not messages:
        return "messages must not be empty"
    pending: set[str] = set()
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return f"message {position} has no valid role"
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (f"message {position}: messages with role 'tool' must be a response to a preceding "
                        "message with 'tool_calls'")
            pending.discard(call_id)
            continue
        if pending:
            return (f"message {position}: an assistant message with 'tool_calls' must be followed by tool "
                    "messages responding to each 'tool_call_id'")
        if role == "assistant":
            pending = {str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict)}
    if pending:
        return "the last assistant message has tool_calls without tool results"
    return None


class _Handler(JsonHandler):
    owner: ModelServer

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        tokenize = self.path == "/tokenize" and self.owner.tokenizer_server is not None
        if not tokenize and self.path.rstrip("/") != "/v1/chat/completions":
            self._record_other()
            self.send_json(404, {"error": {"message": "Not Found", "type": "NotFoundError", "code": 404}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.send_json(400, _error("request body must be a JSON object"))
            return
        if tokenize:
            with self.owner._lock:
                self.owner.tokenize_requests += 1
                down = self.owner.tokenizer_down
                self.owner.tokenize_failures += down
            if down:  # an outage of the server's tokenizer: /tokenize fails while chat still answers
                self.send_json(500, _server_error())
                return
            self.send_json(*self.owner.tokenizer_server.tokenize(body))
            return
        status, payload = self.owner.handle_chat(body, conversation=self.headers.get(CONVERSATION_HEADER))
        if isinstance(payload, list):
            self._sse(payload)
        else:
            self.send_json(status, payload)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in {"/v1/models", "/models"}:
            self.send_json(200, self.owner.models())
        else:
            self._record_other()
            self.send_json(404, {"error": {"message": "Not Found", "type": "NotFoundError", "code": 404}})

    def _record_other(self) -> None:
        with self.owner._lock:
            self.owner.other_paths.append(f"{self.command} {self.path}")

    def _sse(self, chunks: list[dict[str, Any] | str]) -> None:
        lines = (c if isinstance(c, str) else json.dumps(c) for c in chunks)  # a str: a chunk sent as it is
        data = "".join(f"data: {line}\n\n" for line in lines) + "data: [DONE]\n\n"
        self.send_body(200, "text/event-stream", data.encode())


class ModelServer(LoopbackServer):
    """Start/stop as a context manager; binds 127.0.0.1 on a free port.

    ``prompt_inflation`` is added to the REPORTED ``usage.prompt_tokens`` only (to force
    compaction on small transcripts); ``prompt_scale`` multiplies it (a provider whose tokenizer is not the one
    Baton counts with: its route calibrates); the window check always uses the real count.
    ``on_request`` is called after each recorded chat request (the demo prints from it).
    ``fail_main_requests`` (1-based ordinals over the main, streaming requests in arrival order,
    failed attempts included) answers each of those requests ONCE with HTTP 500, before the
    policy sees it, so the client retries the same payload (Hermes 0.19.0 classifies a bare 500 as
    a retryable ``server_error`` and waits ~2-3 s). The failed attempts are kept apart in
    ``injected_failures`` (status 500, ``index`` = the arrival ordinal) and are never part of
    ``requests``, ``main_requests`` or ``rejections``; ``on_request`` is called for them too.
    ``counts_for_itself`` makes it a vLLM-like server: /tokenize answers as vLLM's does (``VllmStandin``'s
    rendering of the same tokenizer) and /v1/models says ``owned_by: "vllm"``.
    """

    handler = _Handler
    thread_name = "model-server"

    def __init__(
        self,
        policy: Policy,
        *,
        context_window: int = 65536,
        model_name: str = DEFAULT_MODEL_NAME,
        tokenizer_dir: str | Path | None = None,
        prompt_inflation: int = 0,
        prompt_scale: float = 1.0,
        on_request: Callable[[RecordedRequest], None] | None = None,
        fail_main_requests: Iterable[int] = (),
        counts_for_itself: bool = False,
        call_id_tag: str = "",
    ) -> None:
        self.policy = policy
        self.tokenizer_server = None
        if counts_for_itself:
            from batontest.vllm_standin import VllmStandin

            self.tokenizer_server = VllmStandin(tokenizer_dir, model_name=model_name, max_model_len=context_window)
        self.tokenize_requests = 0
        self.tokenize_failures = 0
        self.tokenizer_down = False  # set: /tokenize answers 500 until it is cleared (a tokenizer outage)
        self.call_id_tag = call_id_tag  # a second server in one conversation must not repeat the first's call ids
        self.fail_main_requests = frozenset(int(n) for n in fail_main_requests)
        self.injected_failures: list[RecordedRequest] = []
        self._main_arrivals = 0
        self.context_window = context_window
        self.model_name = model_name
        self.prompt_inflation = prompt_inflation
        self.prompt_scale = prompt_scale
        self.on_request = on_request
        self.tokenizer_dir = str(tokenizer_dir) if tokenizer_dir else None
        self.requests: list[RecordedRequest] = []
        self.other_paths: list[str] = []
        self._lock = threading.Lock()

    @functools.cached_property
    def count_prompt(self) -> PromptCounter:
        """Baton's hf backend on the real tokenizer (loaded on first use: the vLLM oracle never needs it)."""
        return shared_prompt_counter(self.tokenizer_dir)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (ends in ``/v1``)."""
        return f"{self.url}/v1"

    # -- views for assertions -----------------------------------------------------------------

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.main]

    @property
    def auxiliary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if not r.main]

    @property
    def rejections(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.status != 200]

    def iter_payload_text(self) -> Iterator[str]:
        """Every message content and tool-call argument string the server received."""
        for request in self.requests:
            for message in request.messages:
                content = message.get("content")
                yield content if isinstance(content, str) else json.dumps(content)
                for call in message.get("tool_calls") or []:
                    yield str((call.get("function") or {}).get("arguments"))

    # -- chat completions ---------------------------------------------------------------------

    def handle_chat(self, body: dict[str, Any], *,
                    conversation: str | None = None) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """Returns (status, JSON body) or (200, list of SSE chunks) for a streaming reply; ``conversation`` is
        the tap's tag of the request (``conversation_tap.CONVERSATION_HEADER``), kept on its record."""
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        record = RecordedRequest(
            index=0, path="/v1/chat/completions", stream=bool(body.get("stream")), main=is_main(body),
            messages=messages,
            tools=body.get("tools") or [], max_tokens=body.get("max_tokens"),
            max_completion_tokens=body.get("max_completion_tokens"), conversation=conversation,
        )
        if record.main and self._inject_failure(record):
            return 500, _server_error()
        refusal = self.admit(body, record)
        if refusal is None:
            record.reply = host_names(self.policy(body), record.tool_names)
        else:
            record.status, record.rejection = refusal[0], _error_text(refusal[1])
        self._record(record)
        if refusal is not None:
            return refusal
        assert record.reply is not None and record.prompt_tokens is not None
        completion_tokens = self.count_completion(_reply_text(record.reply))
        reported = round(record.prompt_tokens * self.prompt_scale) + self.prompt_inflation
        usage = {
            "prompt_tokens": reported,
            "completion_tokens": completion_tokens,
            "total_tokens": reported + completion_tokens,
        }
        completion_id = f"chatcmpl-{record.index}"
        calls = f"{self.call_id_tag}{record.index}"  # tool-call ids: call_<tag><request index>_<n>
        shown = usage if record.reply.usage else None
        if record.stream:
            return 200, _stream_chunks(completion_id, self.model_name, calls, record.reply, shown)
        return 200, _completion(completion_id, self.model_name, calls, record.reply, shown)

    def admit(self, body: dict[str, Any], record: RecordedRequest) -> tuple[int, dict[str, Any]] | None:
        """Judge one request: set ``record.prompt_tokens``; return the refusal (status, JSON body) or None."""
        problem = unsupported_parameter(body) or protocol_problem(record.messages)
        if problem is None:
            try:
                record.prompt_tokens = self.count_prompt(body)
            except Exception as exc:  # the real template refused the request: a real server answers 400
                problem = f"chat template error ({type(exc).__name__})"
        if problem is None and record.prompt_tokens is not None:
            requested = record.prompt_tokens + record.output_budget
            if requested > self.context_window:
                problem = (f"This model's maximum context length is {self.context_window} tokens. However, you "
                           f"requested {requested} tokens ({record.prompt_tokens} in the messages, "
                           f"{record.output_budget} in the completion). Please reduce the length of the messages "
                           "or completion.")
        return None if problem is None else (400, _error(problem))

    def count_completion(self, text: str) -> int:
        """``usage.completion_tokens`` of a scripted reply."""
        return self.count_prompt.backend.count_text(text).tokens or 0

    def _inject_failure(self, record: RecordedRequest) -> bool:
        """True (and the attempt kept in ``injected_failures``) when this main arrival must fail once."""
        with self._lock:
            self._main_arrivals += 1
            if self._main_arrivals not in self.fail_main_requests:
                return False
            record.index = self._main_arrivals
            record.status, record.rejection = 500, "injected server error"
            self.injected_failures.append(record)
        if self.on_request is not None:
            self.on_request(record)
        return True

    def models(self) -> dict[str, Any]:
        owner = "vllm" if self.tokenizer_server is not None else "baton-test"
        entry = {"id": self.model_name, "object": "model", "created": FIXED_CREATED, "owned_by": owner,
                 "max_model_len": self.context_window, "context_length": self.context_window}
        return {"object": "list", "data": [entry]}

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            record.index = len(self.requests)
            self.requests.append(record)
        if self.on_request is not None:
            self.on_request(record)


# A scripted call's name -> the same tool's name in another Hermes version (0.22 renamed todo to todo_list).
RENAMED_TOOLS = {"todo": "todo_list"}


def host_names(reply: Reply, offered: list[str]) -> Reply:
    """``reply`` calling each tool by the name this host offers (a script written for 0.19's names runs on
    0.22); a name the request offers is kept as it is."""
    calls = tuple(ToolCall(RENAMED_TOOLS[c.name], c.arguments)
                  if c.name not in offered and RENAMED_TOOLS.get(c.name) in offered else c for c in reply.tool_calls)
    return Reply(content=reply.content, tool_calls=calls) if calls != reply.tool_calls else reply


REASONING_MODEL = re.compile(r"^(?:openai/)?(?:o[1-9](?:$|-)|gpt-5)", re.IGNORECASE)


def unsupported_parameter(body: dict[str, Any]) -> str | None:
    """What OpenAI answers when a reasoning model (o1/o3/o4, gpt-5) is sent ``max_tokens``."""
    if body.get("max_tokens") is not None and REASONING_MODEL.match(str(body.get("model") or "")):
        return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.")
    return None


def _reply_text(reply: Reply) -> str:
    calls = "".join(json.dumps(c.arguments, sort_keys=True) for c in reply.tool_calls)
    return (reply.content or "") + calls


def _tool_call_dicts(reply: Reply, request_index: int | str) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{request_index}_{i}", "type": "function",
         "function": {"name": call.name, "arguments": json.dumps(call.arguments, sort_keys=True)}}
        for i, call in enumerate(reply.tool_calls)
    ]


def _chunk(completion_id: str, model: str, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": FIXED_CREATED, "model": model,
            "choices": choices, **extra}


def _stream_chunks(completion_id: str, model: str, index: int | str, reply: Reply,
                   usage: dict[str, int] | None) -> list[dict[str, Any] | str]:
    """Role chunk, content deltas, tool-call deltas (header then arguments), finish, usage-only (none when
    ``usage`` is None; a chunk that is not JSON after the first delta when the reply is ``junk``)."""

    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return _chunk(completion_id, model, [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}])

    chunks: list[dict[str, Any] | str] = [delta({"role": "assistant", "content": ""})]
    if reply.junk:
        chunks.append('{"id": "' + completion_id + '", "choices": [{"delta": {"content": "cut o')
    text = reply.content or ""
    for start in range(0, len(text), 64):
        chunks.append(delta({"content": text[start : start + 64]}))
    for position, call in enumerate(_tool_call_dicts(reply, index)):
        header = {"index": position, "id": call["id"], "type": "function",
                  "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(delta({"tool_calls": [header]}))
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), 512):
            piece = {"index": position, "function": {"arguments": arguments[start : start + 512]}}
            chunks.append(delta({"tool_calls": [piece]}))
    chunks.append(delta({}, reply.finish_reason))
    if usage is not None:
        chunks.append(_chunk(completion_id, model, [], usage=usage))
    return chunks


def _completion(completion_id: str, model: str, index: int | str, reply: Reply,
                usage: dict[str, int] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = _tool_call_dicts(reply, index)
    return {"id": completion_id, "object": "chat.completion", "created": FIXED_CREATED, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
            **({"usage": usage} if usage is not None else {})}


def _server_error() -> dict[str, Any]:
    return {"error": {"message": "The server had an error while processing your request.", "type": "server_error",
                      "param": None, "code": 500}}


def _error_text(payload: Any) -> str:
    """The message of an OpenAI-style error body (the whole body as JSON when it has none)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else json.dumps(payload)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
