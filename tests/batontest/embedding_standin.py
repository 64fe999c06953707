"""A loopback OpenAI-compatible ``/v1/embeddings`` server for fast tests: real HTTP, a toy embedder behind it.

The toy embedder maps each word to a concept (``CONCEPTS``: a few synonyms share one; other words weigh little) and
hashes concepts into
512 dimensions, so a paraphrase built from those synonyms lands near its statement: enough to prove that recall
ranks by what the embedder says. It is never the only proof: the benchmark runs all-MiniLM-L6-v2.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 512
CONCEPTS = {word: concept for concept, words in {
    "port": "port listen listens socket", "database": "database db postgres pooler pgbouncer",
    "staging": "staging pre-production preproduction", "restart": "restart bounce reboot",
    "worker": "worker workers process processes", "ingest": "ingest loading loader",
}.items() for word in words.split()}


def toy_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z0-9-]+", text.lower()):
        concept = CONCEPTS.get(word, word)  # a known concept weighs 1, any other word 0.1 (a crude "meaning")
        vector[int(hashlib.sha256(concept.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0 if word in CONCEPTS else 0.1
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm if any(vector) else 1.0 / math.sqrt(DIMENSIONS) for x in vector]


def refusal(length: int, window: int) -> dict[str, Any]:
    """vLLM 0.32's HTTP 400 body for a text longer than the model's window (the whole request is refused)."""
    return {"error": {"message": f"This model's maximum context length is {window} tokens. However, your prompt "
                                 f"contains at least {length} input tokens, which exceeds this limit even without any "
                                 f"output tokens. Please reduce the length of the input prompt. (parameter="
                                 f"input_tokens, value={length})", "type": "BadRequestError", "param": "input_tokens",
                      "code": 400}}


class EmbeddingStandin:
    """``with EmbeddingStandin() as server: server.url``; ``fail_with`` makes it answer that HTTP status;
    ``requests`` counts the texts it embedded per request. ``max_chars`` is a window (a character for a token):
    a request with a longer text is refused as vLLM refuses it (HTTP 400, ``refusal``), unless it asks to cut
    (``truncate_prompt_tokens``); ``says_window`` makes ``/v1/models`` report it as vLLM does (``max_model_len``)."""

    def __init__(self, max_chars: int | None = None, says_window: bool = False) -> None:
        self.fail_with: int | None = None
        self.malformed = False
        self.max_chars = max_chars
        self.requests: list[int] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path != "/v1/models" or not says_window:
                    self._send(404, {"error": "not found"})
                    return
                self._send(200, {"object": "list", "data": [{"id": "toy", "object": "model", "owned_by": "vllm",
                                                               "max_model_len": standin.max_chars}]})

            def do_POST(self) -> None:  # noqa: N802
                body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"]
                standin.requests.append(len(texts))
                if standin.fail_with is not None:
                    self._send(standin.fail_with, {"error": "failing on purpose"})
                    return
                if standin.max_chars is not None:
                    if body.get("truncate_prompt_tokens"):
                        texts = [text[:body["truncate_prompt_tokens"]] for text in texts]
                    longest = max(map(len, texts), default=0)
                    if longest > standin.max_chars:
                        self._send(400, refusal(longest, standin.max_chars))
                        return
                data = [{"object": "embedding", "index": i, "embedding": toy_vector(t)} for i, t in enumerate(texts)]
                data.reverse()  # servers may answer out of order: the index says where each belongs
                self._send(200, {"data": "nope"} if standin.malformed else {"object": "list", "data": data})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> EmbeddingStandin:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
