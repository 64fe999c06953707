"""An immutable text kept as a few chunks, so the rendered prompt of a long conversation can be cut near its end
and extended without copying the megabytes before the cut on every turn."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

MAX_CHUNKS = 64  # beyond this the chunks before the last one are joined (amortised: one copy per 64 turns)


@dataclass(frozen=True)
class Chunks:
    parts: tuple[str, ...]
    ends: tuple[int, ...]  # ends[k] is the offset where parts[k] ends

    @classmethod
    def of(cls, text: str) -> Chunks:
        return cls((text,), (len(text),)) if text else cls((), ())

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def slice(self, start: int, stop: int) -> str:
        """``text[start:stop]`` for ``0 <= start <= stop <= len``."""
        out: list[str] = []
        first = bisect.bisect_right(self.ends, start)
        for index in range(first, len(self.parts)):
            begin = self.ends[index] - len(self.parts[index])
            if begin >= stop:
                break
            out.append(self.parts[index][max(start, begin) - begin:min(stop, self.ends[index]) - begin])
        return "".join(out)

    def cut_and_append(self, at: int, tail: str) -> Chunks:
        """``text[:at] + tail``."""
        keep = bisect.bisect_left(self.ends, at)
        parts = list(self.parts[:keep])
        if keep < len(self.parts):
            begin = self.ends[keep] - len(self.parts[keep])
            if at > begin:
                parts.append(self.parts[keep][:at - begin])
        if tail:
            parts.append(tail)
        if len(parts) > MAX_CHUNKS:
            parts = ["".join(parts[:-1]), parts[-1]]
        ends, offset = [], 0
        for part in parts:
            offset += len(part)
            ends.append(offset)
        return Chunks(tuple(parts), tuple(ends))
