"""Exact incremental counting of a rendered prompt, piece by piece.

A tokenizer extracts its added/special tokens (``<|im_start|>``, ``[INST]``, ...) before it
pre-tokenizes, so BPE never merges across one. A rendered chat prompt can therefore be split
AT those strings, each piece between them encoded on its own, and the sum is exactly the
count of encoding the whole prompt. Chat templates put special tokens around every message,
so when a conversation grows by one message only the new pieces are encoded; the rest come
from a bounded, thread-safe LRU cache. (Splitting anywhere else is not exact: cutting 1 MB of
text into 16 chunks changed its count by 4 tokens.)
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

# Memory of one PieceCounter (one per hf or tiktoken backend): at most MAX_ENTRIES pieces (a piece is the text
# between two special tokens, about one message) holding at most MAX_CACHED_CHARS characters in all; a longer piece
# is counted but never kept. In bytes: 1 to 4 per character (CPython's str) plus about 100 per entry.
MAX_ENTRIES = 16_384
MAX_CACHED_CHARS = 32 * 1024 * 1024
# Counts for a batch of texts encoded with no special tokens added, in order.
BatchCounter = Callable[[Sequence[str]], Sequence[int]]


class PieceCounter:
    """Sum of cached per-piece counts; exact for tokenizers that split at ``split_tokens`` first.

    ``split_tokens`` must be strings the tokenizer always turns into exactly one token and never
    merges with neighbouring text (added tokens without lstrip/rstrip/single_word). Longest
    match wins where they overlap, as in the tokenizer's own added-token matcher.
    """

    def __init__(
        self,
        count_batch: BatchCounter,
        split_tokens: Iterable[str],
        *,
        max_entries: int = MAX_ENTRIES,
        max_cached_chars: int = MAX_CACHED_CHARS,
    ) -> None:
        tokens = sorted({t for t in split_tokens if t}, key=lambda t: (-len(t), t))
        self._split_tokens = frozenset(tokens)
        self._token_lengths = sorted({len(t) for t in tokens})
        self._pattern = re.compile("(" + "|".join(map(re.escape, tokens)) + ")") if tokens else None
        self._count_batch = count_batch
        self._max_entries = max_entries
        self._max_cached_chars = max_cached_chars
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cached_chars = 0
        self._lock = threading.Lock()
        self.encoded_pieces = 0  # pieces sent to the tokenizer so far (observability, tests)

    def split(self, text: str) -> list[str]:
        """The non-empty pieces of ``text``: split tokens on their own, text between them."""
        if self._pattern is None:
            return [text] if text else []
        return [piece for piece in self._pattern.split(text) if piece]

    def count(self, text: str) -> int:
        """Exact token count of ``text`` (no special tokens added), reusing cached pieces."""
        return self.count_all((text,))

    def count_all(self, texts: Iterable[str]) -> int:
        """Sum of the exact counts of each text encoded on its own: one lock round and one batch for all of them
        (a chat count made of many separately encoded texts pays the per-call overhead once)."""
        if self._pattern is None:
            pieces = [text for text in texts if text]
        else:
            pieces = [piece for text in texts for piece in self._pattern.split(text) if piece]
        return sum(self._piece_counts(pieces))

    def spans(self, text: str) -> tuple[list[int], list[int], int]:
        """Where each piece of ``text`` starts, the exact count of everything before each start, and the total.

        Lets a caller reuse the count of any prefix that ends where a piece starts (``seam_is_clean``)."""
        pieces = self.split(text)
        starts: list[int] = []
        before: list[int] = []
        offset = total = 0
        for piece, tokens in zip(pieces, self._piece_counts(pieces)):
            starts.append(offset)
            before.append(total)
            offset += len(piece)
            total += tokens
        return starts, before, total

    def seam_is_clean(self, left: str, right: str) -> bool:
        """Whether ``left + right`` counts exactly as ``left`` plus ``right``: true at either end, else only when
        ``right`` starts with a split token and no split token straddles the seam.

        ``left`` may be just the last characters before the seam and ``right`` the first ones after it, as long as
        each holds at least ``max_token_length - 1`` characters (or all there is)."""
        if not left or not right:
            return True
        if not any(right[:length] in self._split_tokens for length in self._token_lengths):
            return False
        for length in self._token_lengths:
            for taken in range(1, min(length, len(left) + 1)):
                if left[-taken:] + right[: length - taken] in self._split_tokens:
                    return False
        return True

    def token_starts(self, text: str, start: int, stop: int) -> list[int]:
        """Positions in ``[start, stop]`` where the splitter finds a split token in ``text``, ascending
        (candidate seams for ``seam_is_clean``, which has the last word)."""
        if self._pattern is None:
            return []
        window = self._pattern.finditer(text, start, min(len(text), stop + self.max_token_length))
        return [match.start() for match in window if match.start() <= stop]

    @property
    def split_tokens(self) -> frozenset[str]:
        return self._split_tokens

    @property
    def max_token_length(self) -> int:
        return max(self._token_lengths, default=0)

    def _piece_counts(self, pieces: Sequence[str]) -> list[int]:
        """The count of each piece, in order: cached ones from the cache, the rest encoded in one batch."""
        counts: dict[str, int] = {}
        missing: list[str] = []
        with self._lock:
            for piece in pieces:
                if piece in counts or piece in self._split_tokens:
                    continue
                cached = self._cache.get(piece)
                if cached is None:
                    counts[piece] = -1
                    missing.append(piece)
                else:
                    self._cache.move_to_end(piece)
                    counts[piece] = cached
        if missing:
            fresh = list(self._count_batch(missing))
            if len(fresh) != len(missing):
                raise RuntimeError("tokenizer returned a different number of counts than pieces")
            counts.update(zip(missing, fresh))
            with self._lock:
                self.encoded_pieces += len(missing)
                for piece, value in zip(missing, fresh):
                    self._remember(piece, value)
        return [1 if piece in self._split_tokens else counts[piece] for piece in pieces]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cached_chars = 0

    def __len__(self) -> int:
        return len(self._cache)

    def __getstate__(self) -> dict[str, object]:
        """Copies and pickles get the cache but a fresh lock (a lock cannot be copied): a backend holding a
        PieceCounter survives ``copy.deepcopy`` (Hermes copies its context engine)."""
        with self._lock:
            state = {**self.__dict__, "_cache": OrderedDict(self._cache)}
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _remember(self, piece: str, value: int) -> None:
        if len(piece) > self._max_cached_chars or piece in self._cache:
            return
        self._cache[piece] = value
        self._cached_chars += len(piece)
        while len(self._cache) > self._max_entries or self._cached_chars > self._max_cached_chars:
            evicted, _ = self._cache.popitem(last=False)
            self._cached_chars -= len(evicted)
