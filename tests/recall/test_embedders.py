"""Embedders (issue 32 item 2): the OpenAI-compatible backend over real HTTP, its errors and breaker, texts longer
than the server's window, the kit's conformance check, the settings, and hybrid ranking that finds a paraphrase
lexical ranking cannot."""

from __future__ import annotations

import logging

import pytest
from batontest.embedding_standin import EmbeddingStandin, toy_vector

from baton_engine.embedding import EmbedderBreaker, EmbedderConfig, EmbedderError, embed_questions, load_embedder
from baton_engine.embedding.refusals import mean_direction
from baton_engine.recall import MemoryIndex, dense, recall_tool
from baton_engine.settings import SettingsError, load_settings
from baton_engine.testing.embedder_conformance import check_embedder
from baton_engine.tokens.rough import estimate_tokens_rough as rough


def _config(url: str) -> EmbedderConfig:
    return EmbedderConfig("openai", url, "toy", timeout_seconds=5)


def test_the_openai_backend_batches_and_keeps_input_order() -> None:
    with EmbeddingStandin() as server:
        embedder = load_embedder(_config(server.url))
        texts = [f"text number {n}" for n in range(70)]
        assert embedder.embed(texts) == [pytest.approx(toy_vector(t)) for t in texts]
        assert server.requests == [64, 6] and embedder.name == "openai:toy"


@pytest.mark.parametrize(("fault", "words"), [("status", "HTTP 503"), ("malformed", "no OpenAI embeddings list")])
def test_a_failing_server_is_a_clear_error_then_the_circuit_fails_fast(fault: str, words: str) -> None:
    now = [0.0]
    with EmbeddingStandin() as server:
        if fault == "status":
            server.fail_with = 503
        else:
            server.malformed = True
        embedder = EmbedderBreaker(load_embedder(_config(server.url)).inner, clock=lambda: now[0])
        with pytest.raises(EmbedderError, match=words):
            embedder.embed(["a"])
        with pytest.raises(EmbedderError, match="circuit open"):
            embedder.embed(["a"])
        assert server.requests == [1] and not embedder.healthy
        server.fail_with, server.malformed = None, False
        now[0] = 61.0  # after the cool-off one call probes, and success closes the circuit
        assert embedder.embed(["a"]) and embedder.healthy


def test_a_text_longer_than_the_window_costs_only_itself(caplog: pytest.LogCaptureFixture) -> None:
    """A server that refuses the whole batch (HTTP 400, as vLLM does) for one text over its window: the others
    keep their vectors, a long text of several lines is embedded in parts (their mean direction), a single line
    or a text whose parts are still too long gets no vector, and the breaker stays closed."""
    lines = [f"line {n} of the deploy notes: bounce the ingest workers after the port change" for n in range(4)]
    parts = "\n".join(lines[:2]) + "\n", "\n".join(lines[2:])
    one_line, many_lines = "x" * 300, "\n".join(["y" * 150] * 16)
    texts = ["short one", "\n".join(lines), "short two", one_line, many_lines]
    assert len(texts[1]) > 200 and all(len(part) <= 200 for part in parts)
    with EmbeddingStandin(max_chars=200) as server, caplog.at_level(logging.WARNING, "baton_engine.embedding"):
        embedder = load_embedder(_config(server.url))
        vectors = embedder.embed(texts)
        requests = list(server.requests)
        assert embedder.embed(["z" * 201]) == [None] and embedder.healthy
    assert vectors[0] == pytest.approx(toy_vector(texts[0])) and vectors[2] == pytest.approx(toy_vector(texts[2]))
    assert vectors[1] == pytest.approx(mean_direction([toy_vector(part) for part in parts]))
    assert vectors[3] is None and vectors[4] is None
    # the batch, each text alone, the long one's halves; the 16 lines cut three times (15 requests); the lone text
    assert requests == [5, 1, 1, 1, 1, 1, 1, 1, *[1] * 14] and server.requests[len(requests):] == [1]
    assert [r.getMessage() for r in caplog.records] == [
        "embedder: the server refused a batch of 5 text(s); 2 embedded alone, 1 in parts, 2 not at all (ranked "
        "lexically)", "embedder: the server refused a batch of 1 text(s); 0 embedded alone, 0 in parts, 1 not at all "
        "(ranked lexically)"]


def test_a_server_that_says_its_window_cuts_each_text_to_its_head() -> None:
    """vLLM reports ``max_model_len`` on ``/v1/models``: every request asks it to cut (``truncate_prompt_tokens``),
    so a batch with a long text is answered at once and the long text's vector is its head's."""
    texts = ["short one", "w" * 150 + " the tail past the window", "short two"]
    with EmbeddingStandin(max_chars=150, says_window=True) as server:
        vectors = load_embedder(_config(server.url)).embed(texts)
        assert server.requests == [3]
    assert vectors == [pytest.approx(toy_vector(text[:150])) for text in texts]


def test_an_unknown_backend_or_missing_url_says_how_to_fix_it() -> None:
    with pytest.raises(EmbedderError, match="installed: openai"):
        load_embedder(EmbedderConfig("nope"))
    with pytest.raises(EmbedderError, match="needs url"):
        load_embedder(EmbedderConfig("openai", model="m"))


def test_the_kit_passes_a_conformant_backend_and_fails_a_broken_one() -> None:
    with EmbeddingStandin() as server:
        report = check_embedder(load_embedder(_config(server.url)), semantic=False)
    assert report.ok, report.text()

    class Ragged:
        name = "ragged"

        def embed(self, texts):
            return [[1.0] * (n + 1) for n, _ in enumerate(texts)]

    assert check_embedder(Ragged()).check("shape").status == "fail"


def test_baton_embedder_in_config_yaml() -> None:
    settings = load_settings(env={}, hermes_block={"embedder": {"backend": "openai", "url": "http://127.0.0.1:8000",
                                                                "model": "all-MiniLM-L6-v2"}})
    assert settings.embedder == EmbedderConfig("openai", "http://127.0.0.1:8000", "all-MiniLM-L6-v2")
    with pytest.raises(SettingsError, match="not an embedder key"):
        load_settings(env={}, hermes_block={"embedder": {"backend": "openai", "urll": "http://x"}})
    with pytest.raises(SettingsError, match="must be a mapping with a backend"):
        load_settings(env={}, hermes_block={"embedder": "openai"})


def test_hybrid_ranking_finds_the_paraphrase_lexical_ranking_cannot() -> None:
    index = MemoryIndex()
    index.add("k", [{"role": "user", "content": "Staging pgbouncer settled: DB_PORT=6543."},
                    *({"role": "user", "content": f"Review note {n}: rename the helper in module {n}."}
                      for n in range(30))])
    question = {"mode": "search", "query": "which socket does the pre-production pooler listen on?"}
    lexical = recall_tool(index.source("k"), question, rough)
    assert all("6543" not in hit["snippet"] for hit in lexical["hits"])
    with EmbeddingStandin() as server:
        embedder = load_embedder(_config(server.url))
        recall_tool(index.source("k"), question, rough, embedder)  # queues the vectors (off the request path)
        dense.wait_idle()
        hybrid = recall_tool(index.source("k"), question, rough, embedder)
    assert "6543" in hybrid["hits"][0]["snippet"]


def test_a_passage_the_embedder_refuses_ranks_lexically_and_is_not_asked_again() -> None:
    index = MemoryIndex()
    index.add("k", [{"role": "user", "content": "Staging pgbouncer settled: DB_PORT=6543."},
                    {"role": "user", "content": "ZEBRA_TOKEN " + "q" * 180},
                    *({"role": "user", "content": f"Review note {n}: rename the helper in module {n}."}
                      for n in range(30))])
    question = {"mode": "search", "query": "which socket does the pre-production pooler listen on?"}
    with EmbeddingStandin(max_chars=120) as server:
        embedder = load_embedder(_config(server.url))
        recall_tool(index.source("k"), question, rough, embedder)
        dense.wait_idle()
        hybrid = recall_tool(index.source("k"), question, rough, embedder)
        by_its_word = recall_tool(index.source("k"), {"mode": "search", "query": "ZEBRA_TOKEN"}, rough, embedder)
        dense.wait_idle()
        asked = list(server.requests)
    assert "6543" in hybrid["hits"][0]["snippet"] and embedder.healthy
    assert "ZEBRA_TOKEN" in by_its_word["hits"][0]["snippet"]
    assert asked[-2:] == [1, 1], asked  # after the first search: the two questions only, never the refused passage


def test_a_one_line_fact_in_a_passage_of_filler_ranks_by_its_own_line() -> None:
    """The passage's own vector is diluted by its filler (toy cosine 0.10, under the floor); its line's is not
    (0.83): the hit is found, not weak, and shows that line with one line of context on each side."""
    filler = [f"worker {n}: restart ingest process after reboot, bounce loader" for n in range(5)]
    output = "\n".join([*filler[:2], "staging pgbouncer: DB_PORT=6543", *filler[2:]])
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "cat .env"}'}}
    index = MemoryIndex()
    index.add("k", [{"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": output}])
    question = {"mode": "search", "query": "which socket does the pre-production pooler listen on?"}
    with EmbeddingStandin() as server:
        embedder = load_embedder(_config(server.url))
        recall_tool(index.source("k"), question, rough, embedder)
        dense.wait_idle()
        answer = recall_tool(index.source("k"), question, rough, embedder)
    hit = answer["hits"][0]
    assert answer["found"] is True and hit["role"] == "tool" and not hit["weak"] and hit["score"] > 0.8
    assert hit["line"] == 3 and (hit["first_line"], hit["last_line"]) == (2, 4)
    assert hit["snippet"] == "\n".join(output.split("\n")[1:4])


def test_a_passage_is_embedded_line_by_line() -> None:
    from baton_engine.messages.entry import Entry
    from baton_engine.recall.passages import passages

    entry = Entry("msg-1", 0, "tool", "  port = 6543\n}\nport = 6543\nretries: 4\n----")
    (passage,) = passages(entry)
    assert dense.units(passage) == (dense.Unit(0, "port = 6543"), dense.Unit(3, "retries: 4"))
    (wordless,) = passages(Entry("msg-2", 1, "tool", "}\n----"))
    assert dense.units(wordless) == (dense.Unit(None, "}\n----"),)


def test_a_model_trained_with_prefixes_gets_them_on_questions_and_on_lines() -> None:
    """e5 wants ``query: `` before a question and ``passage: `` before a stored text (issue 46 item 3)."""
    settings = load_settings(env={}, hermes_block={"embedder": {
        "backend": "openai", "url": "http://127.0.0.1:8000", "model": "e5", "query_prefix": "query: ",
        "passage_prefix": "passage: "}})
    assert (settings.embedder.query_prefix, settings.embedder.passage_prefix) == ("query: ", "passage: ")
    with EmbeddingStandin() as server:
        config = EmbedderConfig("openai", server.url, "toy", query_prefix="query: ", passage_prefix="passage: ")
        embedder = load_embedder(config)
        assert embedder.embed(["DB_PORT=6543"]) == [pytest.approx(toy_vector("passage: DB_PORT=6543"))]
        assert embed_questions(embedder, ["which port?"]) == [pytest.approx(toy_vector("query: which port?"))]
        assert embedder.name == "openai:toy passage:"  # another model's vectors: never mixed with the plain ones
        plain = load_embedder(_config(server.url))
        assert embed_questions(plain, ["which port?"]) == [pytest.approx(toy_vector("which port?"))]


def test_each_model_has_its_own_weak_floor(qwen_count) -> None:
    """A cosine means something else for each model (multilingual-e5-small's absent questions reach 0.872): the
    floor under which a hit by meaning is weak is the embedder's ``weak_below`` when it says one."""
    class Close:
        def __init__(self, name: str, floor: float | None) -> None:
            self.name, self.weak_below = name, floor

        def embed(self, texts):
            return [[1.0, 0.0] if text.startswith("which") else [1.0, 0.1] for text in texts]  # cosine 0.995

    index = MemoryIndex()
    index.add("floors", [{"role": "user", "content": "the canary ships on Thursday"}])
    answers = []
    for embedder in (Close("test:floor-default", None), Close("test:floor-high", 0.999)):
        question = {"mode": "search", "query": "which day is the release?"}
        recall_tool(index.source("floors"), question, qwen_count, embedder)
        dense.wait_idle()
        answers.append(recall_tool(index.source("floors"), question, qwen_count, embedder))
    assert [answer["found"] for answer in answers] == [True, False]
    settings = load_settings(env={}, hermes_block={"embedder": {"backend": "openai", "url": "http://x:1", "model": "e5",
                                                                "weak_below": 0.873}})
    assert settings.embedder.weak_below == 0.873
    with pytest.raises(SettingsError, match="weak_below must be a cosine"):
        load_settings(env={}, hermes_block={"embedder": {"backend": "openai", "url": "http://x:1", "weak_below": 3}})
