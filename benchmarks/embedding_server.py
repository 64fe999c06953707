"""A minimal OpenAI-compatible ``/v1/embeddings`` server over a local sentence-transformers model, for the
paraphrase benchmark: the engine's built-in ``openai`` embedder talks to it over HTTP as it would to vLLM or
llama.cpp, while torch stays out of the engine's environment.

Run with a Python that has sentence-transformers: ``python benchmarks/embedding_server.py MODEL_DIR PORT``.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sentence_transformers import SentenceTransformer


def main() -> None:
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
