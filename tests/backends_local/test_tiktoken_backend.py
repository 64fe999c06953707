"""The tiktoken backend: offline vocabularies, exact text counts, documented chat framing."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

from baton_engine.tokens.contract import BackendConfigError, CannotCount, TokenizerConfig
from batontest import assets

from baton_tiktoken import backend as tk_backend
from baton_tiktoken.backend import TiktokenBackend
from baton_tiktoken.encodings import BLOB_URL, SPECS, encoding_for_model, load_encoding


@pytest.fixture(scope="module")
def o200k() -> TiktokenBackend:
    return TiktokenBackend.from_config(TokenizerConfig(backend="tiktoken", model="gpt-4o"))


@pytest.mark.parametrize(("name", "ids"), [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])])
def test_bundled_vocabularies_give_openais_ids(name: str, ids: list[int]) -> None:
    assert load_encoding(name).encode_ordinary("hello world") == ids


@pytest.mark.parametrize("name", sorted(SPECS))
def test_specs_match_tiktoken_openai_public(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pat_str and special tokens equal tiktoken's own constructor (its download replaced by a local read)."""
    local = assets.tiktoken_encoding_file(name)
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: tiktoken.load.load_tiktoken_bpe(str(local), expected_hash))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken must not copy the file anywhere
    reference = getattr(openai_public, name)()
    ours = load_encoding(name)
    assert ours._pat_str == reference["pat_str"]
    assert ours._special_tokens == reference["special_tokens"]
    assert ours._mergeable_ranks == reference["mergeable_ranks"]


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("openai/gpt-4.1-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo-0125", "cl100k_base"),
        ("cl100k_base", "cl100k_base"),
        ("some-unknown-model", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_model_names_map_to_encodings(model: str | None, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_local_file_gz_file_and_cache_directory_all_load(tmp_path: Path) -> None:
    plain = assets.tiktoken_encoding_file("cl100k_base")
    packed = tmp_path / "cl100k_base.tiktoken.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    shutil.copyfile(plain, cache_dir / hashlib.sha1(BLOB_URL.format(name="cl100k_base").encode()).hexdigest())
    for path in (plain, packed, cache_dir, plain.parent):
        backend = TiktokenBackend.from_config(TokenizerConfig(backend="tiktoken", model="gpt-4", path=str(path)))
        assert backend.count_text("hello world").tokens == 2
        assert backend.source == "tiktoken:cl100k_base"


def test_wrong_or_missing_vocabulary_is_a_clear_config_error(tmp_path: Path) -> None:
    bogus = tmp_path / "o200k_base.tiktoken"
    bogus.write_bytes(b"aGVsbG8= 0\n")
    with pytest.raises(BackendConfigError, match="sha256 mismatch"):
        TiktokenBackend.from_config(TokenizerConfig(backend="tiktoken", path=str(bogus)))
    with pytest.raises(BackendConfigError, match="BATON_TOKENIZER_PATH") as info:
        TiktokenBackend.from_config(TokenizerConfig(backend="tiktoken", path=str(tmp_path / "missing")))
    assert str(tmp_path) not in str(info.value)


def test_count_text_is_exact_and_treats_special_strings_as_text(o200k: TiktokenBackend) -> None:
    reference = load_encoding("o200k_base")
    text = "def f():\n    return '<|endoftext|>'  # done\n\n\n   trailing  "
    count = o200k.count_text(text)
    assert count.exact and count.source == "tiktoken:o200k_base"
    assert count.tokens == len(reference.encode(text, disallowed_special=())) == len(reference.encode_ordinary(text))
    assert o200k.count_text("").tokens == 0


def test_chat_count_is_text_plus_documented_framing(o200k: TiktokenBackend) -> None:
    enc = load_encoding("o200k_base")
    n = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    request = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}], "name": "bob"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
            {"role": "tool", "tool_call_id": "1", "content": "42"},
        ]
    }
    expected = (
        4 * tk_backend.TOKENS_PER_MESSAGE
        + n("system") + n("Be brief.")
        + n("user") + n("Hi\nthere") + tk_backend.TOKENS_PER_NAME + n("bob")
        + n("assistant") + tk_backend.TOKENS_PER_TOOL_CALL + n("f") + n('{"x": 1}')
        + n("tool") + n("42")
        + tk_backend.REPLY_PRIMING_TOKENS
    )
    count = o200k.count_chat(request)
    assert count.tokens == expected and count.exact is False
    assert o200k.count_chat({**request, "add_generation_prompt": False}).tokens == expected - tk_backend.REPLY_PRIMING_TOKENS
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    with_tools = o200k.count_chat({**request, "tools": [tool]}).tokens
    assert with_tools - expected == tk_backend.TOOLS_BLOCK_TOKENS + tk_backend.TOKENS_PER_TOOL + n('f\nd\n{"type": "object"}')


def test_bad_chat_request_cannot_count(o200k: TiktokenBackend) -> None:
    with pytest.raises(CannotCount, match="messages"):
        o200k.count_chat({"messages": "secret text"})
    with pytest.raises(CannotCount, match=r"messages\[0\]"):
        o200k.count_chat({"messages": [{"content": "x"}]})


def test_entry_point_registers_the_tiktoken_backend() -> None:
    (entry,) = [ep for ep in entry_points(group="baton_engine.tokenizers") if ep.name == "tiktoken"]
    (spec,) = entry.load().baton_tokenizer_backends()
    backend = spec.factory(TokenizerConfig(backend="tiktoken", model="gpt-3.5-turbo", context_length=16385))
    assert spec.name == "tiktoken" and backend.source == "tiktoken:cl100k_base"
    assert backend.max_model_len == 16385
    assert backend.count_text("hello world").tokens == 2


def test_grown_conversation_encodes_only_new_texts_and_equals_a_fresh_count() -> None:
    """The per-text cache changes speed only: a warm count equals a cold count by a backend with an empty cache."""
    encoding = load_encoding("o200k_base")
    calls: list[str] = []
    warm = TiktokenBackend(encoding)
    warm._encode = lambda text: calls.append(text) or encoding.encode_ordinary(text)  # type: ignore[method-assign]
    tool = {"type": "function", "function": {"name": "grep", "description": "search", "parameters": {"type": "object"}}}
    messages = [{"role": "system", "content": "Be brief."}]
    for turn in range(40):
        messages.append({"role": "user", "content": f"question {turn}: why does test {turn * 7} fail?"})
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": str(turn), "type": "function", "function": {"name": "grep", "arguments": {"pattern": f"t{turn}"}}}]})
        messages.append({"role": "tool", "tool_call_id": str(turn), "content": f"line {turn}: assert x == {turn}"})
    base = {"messages": messages, "tools": [tool]}
    grown = {**base, "messages": [*messages, {"role": "user", "content": "and the flaky one?", "name": "ann"}]}
    assert warm.count_chat(base).tokens == TiktokenBackend(encoding).count_chat(base).tokens
    calls.clear()
    assert warm.count_chat(grown).tokens == TiktokenBackend(encoding).count_chat(grown).tokens
    assert sorted(calls) == sorted(["and the flaky one?", "ann"])  # roles and earlier texts came from the cache
    warm.clear_cache()
    calls.clear()
    warm.count_chat(grown)
    assert len(calls) > 100  # cleared: everything is encoded again
