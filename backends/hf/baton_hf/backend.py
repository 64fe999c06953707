"""Exact counts from a Hugging Face tokenizer and the model's own chat template, offline.

The count equals what a vLLM server with the same tokenizer reports for ``/tokenize`` (chat
form): the request is normalised as vLLM does (``baton_hf.normalize``), rendered
by the real template, and the rendered string is counted with no special tokens added,
piece by piece (``baton_engine.tokens.pieces``) so a grown conversation re-encodes only its
new messages, and re-rendered only in its last turns (``baton_hf.incremental``). Both shortcuts
check themselves at start-up on probe conversations and switch off for a tokenizer or template
where they would not be exact (``piecewise`` / ``incremental`` say which are on).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baton_engine.tokens.contract import (
    BackendConfigError,
    ChatRequest,
    RequestNotCountable,
    TokenCount,
    TokenizerBackend,
    TokenizerConfig,
)
from baton_hf.normalize import RequestShapeError, normalize_request, template_supports_developer
from baton_engine.tokens.pieces import PieceCounter

from baton_hf.incremental import IncrementalCounter
from baton_hf.probes import full_probes, growing_probe, probe_texts
from baton_hf.sandbox import install_fast_paths
from baton_hf.template import accepted_kwargs, detect_content_format

# Tokenizers report a huge placeholder when they do not know the context length.
_SANE_MAX_MODEL_LEN = 10_000_000


class HfBackend(TokenizerBackend):
    """Counts with one loaded tokenizer; safe to share between threads."""

    def __init__(self, tokenizer: Any, name: str, *, context_length: int | None = None) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise BackendConfigError(
                f"tokenizer {name!r} has no chat template; use a tokenizer directory whose "
                "tokenizer_config.json or chat_template.jinja defines one"
            )
        self._tokenizer = tokenizer
        self._name = name
        self._template: str = tokenizer.chat_template
        self._content_format = detect_content_format(self._template)
        self._supports_developer = template_supports_developer(self._template)
        self._accepted_kwargs = accepted_kwargs(self._template, tokenizer.apply_chat_template)
        install_fast_paths(self._template)
        self._max_model_len = context_length or _known_context_length(tokenizer)
        self._encoder = _private_encoder(tokenizer)
        self._pieces = PieceCounter(self._count_batch, _split_tokens(self._encoder))
        if not self._piecewise_is_exact():
            self._pieces = PieceCounter(self._count_batch, ())  # whole texts only, still cached per text
        self._incremental = IncrementalCounter(self.render, self._pieces)
        self._incremental.verify(growing_probe())

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> HfBackend:
        """Load ``config.path`` (a local directory or a cached hub id) without touching the network."""
        location = config.path or config.model
        if not location:
            raise BackendConfigError(
                "the hf tokenizer backend needs a tokenizer: set BATON_TOKENIZER_PATH (or baton.tokenizer.path) "
                "to a local directory holding tokenizer.json + tokenizer_config.json, or to a hub id already in the HF cache"
            )
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=True)
        except Exception as exc:  # OSError, ValueError, ... from transformers/hub
            gone = _looks_like_path(location) and not Path(location).expanduser().exists()
            missing = " (no such directory)" if gone else ""
            raise BackendConfigError(
                f"cannot load an HF tokenizer from {location!r}{missing} offline ({type(exc).__name__}); "
                "point BATON_TOKENIZER_PATH (or baton.tokenizer.path) at a directory with tokenizer.json and "
                "tokenizer_config.json, "
                "or download the model into the HF cache first (huggingface-cli download <id>)"
            ) from None
        return cls(tokenizer, config.model or _display_name(location), context_length=config.context_length)

    @property
    def source(self) -> str:
        return f"hf:{self._name}"

    @property
    def max_model_len(self) -> int | None:
        return self._max_model_len

    @property
    def piecewise(self) -> bool:
        """Whether prompts are counted piece by piece between special tokens (else each text whole)."""
        return self._pieces.max_token_length > 0

    @property
    def incremental(self) -> bool:
        """Whether a grown conversation re-renders only its last turns (else every count renders it all)."""
        return self._incremental.enabled

    def count_chat(self, request: ChatRequest) -> TokenCount:
        tokens = self._incremental.count(request)
        return TokenCount(tokens, exact=True, source=self.source, max_model_len=self._max_model_len)

    def count_text(self, text: str) -> TokenCount:
        return TokenCount(self._pieces.count(text), exact=True, source=self.source, max_model_len=self._max_model_len)

    def render(self, request: ChatRequest) -> str:
        """The prompt string vLLM would tokenize for this request."""
        try:
            normalized = normalize_request(
                request, content_format=self._content_format, supports_developer=self._supports_developer
            )
        except RequestShapeError as exc:
            raise RequestNotCountable(str(exc)) from None
        kwargs = {k: v for k, v in normalized.chat_template_kwargs.items() if k in self._accepted_kwargs}
        try:
            return self._tokenizer.apply_chat_template(
                normalized.messages, tools=normalized.tools, tokenize=False, **kwargs
            )
        except Exception as exc:  # the template rejected the conversation (raise_exception, TypeError, ...)
            raise RequestNotCountable(f"chat template rejected the request ({type(exc).__name__})") from None

    def clear_cache(self) -> None:
        self._pieces.clear()
        self._incremental.clear()

    def _piecewise_is_exact(self) -> bool:
        """Piece-by-piece counts equal whole-text counts on prompts rendered by the real template (special
        tokens, tools, unicode) and on raw special-token strings; False for tokenizers such as SentencePiece
        with a Metaspace prefix, where text right after a special token encodes differently on its own."""
        texts = list(probe_texts(self._pieces.split_tokens))
        for request in full_probes():
            try:
                texts.append(self.render(request))
            except RequestNotCountable:
                continue
        return all(self._pieces.count(text) == len(self._encoder.encode(text, add_special_tokens=False).ids)
                   for text in texts)

    def _count_batch(self, pieces: Sequence[str]) -> list[int]:
        # Safe without a lock: the private encoder is never reconfigured after __init__.
        encodings = self._encoder.encode_batch(list(pieces), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]


def _private_encoder(tokenizer: Any) -> Any:
    """A private copy of the Rust tokenizer with truncation and padding off, so counts are never clipped
    and no caller of the shared tokenizer can reconfigure it under a running count."""
    from tokenizers import Tokenizer

    encoder = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    encoder.no_truncation()
    encoder.no_padding()
    return encoder


def _split_tokens(encoder: Any) -> list[str]:
    """Added tokens the tokenizer extracts verbatim before pre-tokenizing: safe split points."""
    return [
        token.content
        for token in encoder.get_added_tokens_decoder().values()
        if not (token.lstrip or token.rstrip or token.single_word or token.normalized)
    ]


def _known_context_length(tokenizer: Any) -> int | None:
    value = getattr(tokenizer, "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < _SANE_MAX_MODEL_LEN else None


def _looks_like_path(location: str) -> bool:
    return Path(location).is_absolute() or location.startswith((".", "~")) or Path(location).exists()


def _display_name(location: str) -> str:
    """A hub id as-is; for a local path only its last component (no home directories in status output; the
    error that a path cannot be loaded names all of it, since that is what the user must fix)."""
    return Path(location).name if _looks_like_path(location) else location
