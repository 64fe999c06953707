"""The loopback model server speaking Anthropic Messages (``POST /v1/messages``) or the OpenAI Responses API
(``POST /v1/responses``), for the REAL Hermes loop on those shapes (issue 30, item 6).

Each request is judged like the provider would: validated with ``batontest.validators`` (the providers' SDK types
and pairing rules; a problem is a 400 with the problem, kept in ``invalid``), counted on the real Qwen3 tokenizer
(its own conversion to chat messages here, not Baton's readers), and refused when prompt + cap exceed the window,
with the provider's own wording (Anthropic: ``input length and `max_tokens` exceed context limit: N + M > W``;
Responses: ``context_length_exceeded``). Replies come from the same scripted policies as ``ModelServer``, streamed
as each API streams (Anthropic's ``message_start`` ... ``message_stop`` events; Responses' ``response.created``,
``response.output_item.done`` ..., ``response.completed``), or as one JSON body when not streamed.
"""

from __future__ import annotations

import json
from typing import Any

from batontest.loopback import JsonHandler
from batontest.model_server import ModelServer, RecordedRequest, Reply, _error_text, host_names
from batontest.validators import VALIDATORS

PATHS = {"anthropic_messages": "/v1/messages", "codex_responses": "/v1/responses"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part)


def anthropic_chat(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic request as the chat request the tokenizer counts (text joined, tool_use as tool calls,
    tool_result as tool messages, thinking left out as the API leaves earlier turns' thinking out)."""
    system = body.get("system")
    messages: list[dict[str, Any]] = [{"role": "system", "content": _text(system)}] if system else []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        calls = [{"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(
            b.get("input"), sort_keys=True)}} for b in blocks if b.get("type") == "tool_use"]
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": block["tool_use_id"],
                                 "content": _text(block.get("content"))})
        text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if text or calls:
            messages.append({"role": message["role"], "content": text, **({"tool_calls": calls} if calls else {})})
    tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                               "parameters": t.get("input_schema", {})}}
             for t in body.get("tools") or [] if "name" in t]
    return {"messages": messages, "tools": tools, "stream": True}


def responses_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as the chat request the tokenizer counts (reasoning items left out: only the provider
    can read them)."""
    instructions = body.get("instructions")
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for item in body.get("input") or []:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"}}
            if not (messages and messages[-1]["role"] == "assistant"):
                messages.append({"role": "assistant", "content": ""})
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item.get("output"))
                             if not isinstance(item.get("output"), str) else item["output"]})
        elif kind in (None, "message"):
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
    tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
                                               "parameters": t.get("parameters") or {}}}
             for t in body.get("tools") or [] if t.get("type") == "function"]
    return {"messages": messages, "tools": tools, "stream": True}


class _WireHandler(JsonHandler):
    owner: WireModelServer

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        answer = self.owner.handle_path(self.path.split("?", 1)[0].rstrip("/"), body) if isinstance(
            body, dict) else (400, self.owner._error("request body must be a JSON object", "invalid_request_error"))
        if answer is None:
            with self.owner._lock:
                self.owner.other_paths.append(f"POST {self.path}")
            self.send_json(404, {"error": {"message": "Not Found", "type": "not_found_error"}})
        elif isinstance(answer[1], list):
            data = "".join(f"event: {event}\ndata: {json.dumps(payload)}\n\n" for event, payload in answer[1])
            self.send_body(200, "text/event-stream", data.encode())
        else:
            self.send_json(*answer)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in {"/v1/models", "/models"}:
            self.send_json(200, self.owner.models())
        else:
            self.send_json(404, {"error": {"message": "Not Found", "type": "not_found_error"}})


class WireModelServer(ModelServer):
    """``ModelServer`` on one wire shape (``anthropic_messages`` or ``codex_responses``); ``base_url`` is what
    Hermes is given (the SDKs add ``/v1/messages`` resp. ``/responses``)."""

    handler = _WireHandler

    def __init__(self, shape: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shape = shape
        self.invalid: list[tuple[int, list[str]]] = []  # (request index, problems)

    @property
    def base_url(self) -> str:
        return self.url if self.shape == "anthropic_messages" else f"{self.url}/v1"

    def handle_path(self, path: str, body: dict[str, Any]) -> tuple[int, Any] | None:
        """(status, JSON body) or (200, list of (event, data) for SSE); None for a path this shape does not serve."""
        if path != PATHS[self.shape]:
            return None
        chat = anthropic_chat(body) if self.shape == "anthropic_messages" else responses_chat(body)
        cap = body.get("max_tokens") if self.shape == "anthropic_messages" else body.get("max_output_tokens")
        record = RecordedRequest(index=0, path=path, stream=bool(body.get("stream")), main=bool(body.get("tools")),
                                 messages=chat["messages"], tools=chat["tools"], max_tokens=cap,
                                 max_completion_tokens=None)
        problems = VALIDATORS[self.shape](body)
        refusal: tuple[int, dict[str, Any]] | None = None
        if problems:
            refusal = 400, self._error(f"invalid request: {'; '.join(problems)[:2000]}", "invalid_request_error")
        else:
            record.prompt_tokens = self.count_prompt(chat)
            if record.prompt_tokens + record.output_budget > self.context_window:
                refusal = 400, self._overflow(record.prompt_tokens, record.output_budget)
        if refusal is None:
            record.reply = host_names(self.policy(chat), record.tool_names)
        else:
            record.status, record.rejection = refusal[0], _error_text(refusal[1])
        self._record(record)
        if problems:
            with self._lock:
                self.invalid.append((record.index, problems))
        if refusal is not None:
            return refusal
        assert record.reply is not None and record.prompt_tokens is not None
        output = self.count_completion((record.reply.content or "") + "".join(
            json.dumps(c.arguments) for c in record.reply.tool_calls))
        if self.shape == "anthropic_messages":
            return 200, anthropic_reply(record, output, self.model_name)
        return 200, responses_reply(record, output, self.model_name)

    def _overflow(self, prompt: int, cap: int) -> dict[str, Any]:
        if self.shape == "anthropic_messages":
            return self._error(f"input length and `max_tokens` exceed context limit: {prompt} + {cap} > "
                               f"{self.context_window}, decrease input length or `max_tokens` and try again",
                               "invalid_request_error")
        return {"error": {"message": "Your input exceeds the context window of this model. Please adjust your "
                          "input and try again.", "type": "invalid_request_error", "param": "input",
                          "code": "context_length_exceeded"}}

    def _error(self, message: str, kind: str) -> dict[str, Any]:
        if self.shape == "anthropic_messages":
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def anthropic_reply(record: RecordedRequest, output: int, model: str) -> Any:
    reply: Reply = record.reply  # type: ignore[assignment]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.content}] if reply.content else []
    blocks += [{"type": "tool_use", "id": f"toolu_{record.index}_{i}", "name": c.name, "input": c.arguments}
               for i, c in enumerate(reply.tool_calls)]
    stop = "tool_use" if reply.tool_calls else "end_turn"
    message = {"id": f"msg_{record.index}", "type": "message", "role": "assistant", "model": model,
               "content": blocks, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": record.prompt_tokens, "output_tokens": output}}
    if not record.stream:
        return message
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": {"input_tokens": record.prompt_tokens,
                                                                 "output_tokens": 1}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": output}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def responses_reply(record: RecordedRequest, output: int, model: str) -> Any:
    reply: Reply = record.reply  # type: ignore[assignment]
    items: list[dict[str, Any]] = []
    if reply.content:
        items.append({"type": "message", "id": f"msg_{record.index}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": reply.content, "annotations": []}]})
    items += [{"type": "function_call", "id": f"fc_{record.index}_{i}", "call_id": f"call_{record.index}_{i}",
               "name": c.name, "arguments": json.dumps(c.arguments), "status": "completed"}
              for i, c in enumerate(reply.tool_calls)]
    usage = {"input_tokens": record.prompt_tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": (record.prompt_tokens or 0) + output}
    response = {"id": f"resp_{record.index}", "object": "response", "created_at": 1_764_000_000, "model": model,
                "status": "completed", "output": items, "usage": usage, "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None}
    if not record.stream:
        return response
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": {**response, "status": "in_progress", "output": [], "usage": None}})]
    for index, item in enumerate(items):
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                      "sequence_number": len(events), "item": item}))
        if item["type"] == "message":
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                "content_index": 0, "delta": reply.content, "sequence_number": len(events), "logprobs": []}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                     "sequence_number": len(events), "item": item}))
    events.append(("response.completed", {"type": "response.completed", "sequence_number": len(events),
                                          "response": response}))
    return events
