"""Chunks behaves exactly like the string it stands for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from baton_hf.chunks import MAX_CHUNKS, Chunks

edits = st.lists(st.tuples(st.floats(0, 1), st.text(max_size=5)), max_size=3 * MAX_CHUNKS)


@given(start=st.text(max_size=20), edits=edits, window=st.tuples(st.floats(0, 1), st.floats(0, 1)))
def test_cut_append_and_slice_match_plain_strings(start: str, edits: list[tuple[float, str]],
                                                  window: tuple[float, float]) -> None:
    chunks, plain = Chunks.of(start), start
    for where, tail in edits:
        at = int(where * len(plain))
        chunks, plain = chunks.cut_and_append(at, tail), plain[:at] + tail
        assert len(chunks) == len(plain) and len(chunks.parts) <= MAX_CHUNKS
    low, high = sorted(int(share * len(plain)) for share in window)
    assert chunks.slice(low, high) == plain[low:high]
    assert chunks.slice(0, len(chunks)) == plain
