"""The offline tokenizer assets: integrity, offline loading, concurrent first use."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from batontest import assets


def test_qwen3_dir_holds_the_verified_tokenizer_and_loads_offline() -> None:
    directory = assets.qwen3_dir()
    assert hashlib.sha256((directory / "tokenizer.json").read_bytes()).hexdigest() == assets.QWEN3_TOKENIZER_SHA256
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    assert "<tool_call>" in tokenizer.chat_template
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") == 151644


def test_committed_sha256sums_match_the_committed_files() -> None:
    qwen = assets.ASSETS_DIR / "qwen3"
    for line in (qwen / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        path = qwen / name if (qwen / name).exists() else assets.qwen3_dir() / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name


def test_mistral_nemo_export_has_a_tool_capable_chat_template() -> None:
    directory = assets.mistral_nemo_dir()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    assert "[AVAILABLE_TOOLS]" in tokenizer.chat_template
    assert tokenizer.encode("hello world", add_special_tokens=False) == [29706, 4304]


def test_tiktoken_files_match_openais_published_hashes() -> None:
    for name, digest in assets.TIKTOKEN_SHA256.items():
        path = assets.tiktoken_encoding_file(name)
        assert path.name == f"{name}.tiktoken"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_build_once_under_concurrent_threads_keeps_one_complete_copy(tmp_path: Path) -> None:
    target = tmp_path / "thing"
    builds: list[int] = []

    def slow_build(tmp: Path) -> None:
        builds.append(1)
        (tmp / "part1").write_text("a")
        time.sleep(0.05)
        (tmp / "part2").write_text("b")

    threads = [threading.Thread(target=assets._build_once, args=(target, slow_build)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(p.name for p in target.iterdir()) == ["part1", "part2"]
    assert [p.name for p in tmp_path.iterdir()] == ["thing"]  # no temp leftovers
    assert 1 <= len(builds) <= 4


def test_concurrent_processes_share_one_cache(tmp_path: Path) -> None:
    code = "from batontest import assets; print(assets.tiktoken_encoding_file('cl100k_base'))"
    env = {**os.environ, "BATON_TOKENIZER_CACHE": str(tmp_path)}
    tests_dir = str(Path(__file__).resolve().parents[1])
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env={**env, "PYTHONPATH": tests_dir}, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert outputs == {str(tmp_path / "tiktoken" / "cl100k_base" / "cl100k_base.tiktoken")}
    assert [p.name for p in (tmp_path / "tiktoken").iterdir()] == ["cl100k_base"]
