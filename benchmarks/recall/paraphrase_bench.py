"""Recall in the user's words (issue 32): facts stated once in a long session, asked later in other words.

The session (``paraphrase_corpus``: code review, ops and data work; facts in user turns and in the middle of long
tool results) is fed to the REAL engine as Hermes' loop feeds it (``arms.BatonArm``: the response's usage,
``should_compress`` before every request, ``compress`` when it says so, the request middleware), at a 16K and a
64K window. Then each question is asked ONCE, the question itself as the ``baton_recall`` query, through the
engine's own tool entry point. A question counts as answered when its answer text is in the final window (the
verbatim tail, or the brief) or in the answer of that one call. An absent question counts as a false "found"
when the call does not say ``found: false``. Tokens per call are the exact count of the tool's JSON answer;
latency is the wall time of the tool call. With ``--builtin``, Hermes' own compressor (its summary answered by the
loopback stub: only verbatim survivors count) and keep-recent (the newest messages that fit the same threshold)
are scored on the same session.

With ``--retrieval``, no window and no brief: every message of the session is the compacted lineage and each
question is one ``baton_recall`` search over it (the ranking alone, minutes instead of the full feed's tens of
minutes with an embedder). ``--vectors DIR`` keeps the passages' vectors in DIR across runs (the engine's vector
store; else each run's fresh project holds them, and every run embeds the session again).

Run: ``python benchmarks/recall/paraphrase_bench.py [--quick] [--retrieval] [--builtin] [--embedder-path DIR | --embedder-url
URL] [--vectors DIR] [--out FILE]`` from the repo (tests/ and benchmarks/ on the path); the hermes tox env has
everything but the embedder.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from benchmarks.harness import arms  # noqa: E402
from benchmarks.harness import paraphrase_corpus as corpus  # noqa: E402
from batontest.assets import qwen3_dir  # noqa: E402
from batontest.hermes_home import git_project  # noqa: E402

from baton_engine.embedding import EmbedderConfig  # noqa: E402
from baton_engine.messages.markers import is_baton_message  # noqa: E402
from baton_engine.operations.handoffs import init  # noqa: E402
from baton_engine.recall import MemoryIndex, dense, recall_tool  # noqa: E402
from baton_engine.results import call, dumps  # noqa: E402
from baton_engine.tokens.contract import TokenizerConfig  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("lexical recall of facts asked in other words: at least 14 of 36 at 16K and 64K "
               "(9dba563's), every fact found in its own words"),
    "target": ">= 9dba563's answers, <= 1 false 'found' in 10, <= 600 tokens a call",
    "findings": 21,
    "test": "tests/bench/test_paraphrase_lexical.py",
}

search = importlib.import_module("baton_engine.recall.search")  # the module (the package exports the function)
QWEN3 = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
WINDOWS = (16384, 65536)
Message = dict[str, Any]


def _strings(value: Any) -> list[str]:
    """Every string inside ``value``, JSON text decoded where it parses (a tool result is JSON)."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return [value]
        return [value, *_strings(decoded)] if isinstance(decoded, (dict, list)) else [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _holds(messages: list[Message], answer: str) -> bool:
    return any(answer in text for message in messages for text in _strings(message.get("content")))


def feed(arm: arms.BatonArm | arms.HermesArm, runtime: Any, session: corpus.Session) -> tuple[list[Message], int]:
    """The session through ``arm`` as Hermes' loop drives it: a request after the user message and one after the
    tool result; returns the final window and the compactions."""
    history: list[Message] = []
    compactions = 0

    def request() -> None:
        nonlocal history, compactions
        prompt = runtime.count_chat({"messages": [{"role": "system", "content": arms_system()}, *history]}).tokens
        if arm.observe(prompt):
            history, _stats = arm.compress(history, prompt)
            compactions += 1
            prompt = runtime.count_chat({"messages": [{"role": "system", "content": arms_system()}, *history]}).tokens
        arm.send({"model": arms.MODEL, "messages": [{"role": "system", "content": arms_system()}, *history]}, prompt)

    for start, end in session.turns:
        turn = [json.loads(json.dumps(m)) for m in session.messages[start:end]]
        history.append(turn[0])
        request()
        history.extend(turn[1:-1])
        request()
        history.append(turn[-1])
    return history, compactions


def arms_system() -> str:
    return "You are Hermes, an agent working in a git repository. Use the tools; keep answers short."


def _project() -> Path:
    root = git_project(Path(tempfile.mkdtemp(prefix="baton-bench-paraphrase-")), {"README.md": "# shop\n"})
    call(init, root)
    return root


def ask(arm: arms.BatonArm, runtime: Any, question: str) -> tuple[dict[str, Any], int, float]:
    """One ``baton_recall`` search with the question as the query: the answer, its exact tokens, its seconds."""
    started = time.perf_counter()
    text = arm.engine.handle_tool_call("baton_recall", {"mode": "search", "query": question}, messages=[])
    seconds = time.perf_counter() - started
    return json.loads(text), runtime.main.count_text(text).tokens or 0, seconds


def _found(answer: dict[str, Any]) -> bool:
    """What the call claims: ``found`` when the engine says it, else any hit at all (before issue 32)."""
    return bool(answer.get("found", bool(answer.get("hits"))))


def score_baton(runtime: Any, session: corpus.Session, window: int, variants: dict[str, Any]) -> list[dict[str, Any]]:
    """Feed the session once at ``window``, then ask every question under each ranking variant (name -> a
    function that sets it up); one row per variant."""
    arm = arms.BatonArm(f"paraphrase-{window}", _project(), runtime, window)
    arm.engine.on_session_start(f"bench-paraphrase-{window}", platform="cli")
    started = time.perf_counter()
    final, compactions = feed(arm, runtime, session)
    fed = time.perf_counter() - started
    started = time.perf_counter()
    dense.wait_idle()  # the vectors computed in the background during the session (none without an embedder)
    waited = time.perf_counter() - started
    return [{**_questions(lambda question: ask(arm, runtime, question), final), "variant": name, "window": window, "compactions": compactions,
             "feed_seconds": fed, "embed_wait_seconds": waited,
             "degraded": arm.engine.compaction.degradation_reason} for name, setup in variants.items() if not setup()]


def score_retrieval(runtime: Any, session: corpus.Session, variants: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of the session as the compacted lineage, each question one search over it (no window)."""
    index = MemoryIndex()
    index.add("lineage", session.messages)
    source, embedder = index.source("lineage"), runtime.embedder()
    count = lambda text: runtime.main.count_text(text).tokens or 0  # noqa: E731

    def one(question: str) -> tuple[dict[str, Any], int, float]:
        started = time.perf_counter()
        answer = recall_tool(source, {"mode": "search", "query": question}, count, embedder)
        return answer, count(dumps(answer)), time.perf_counter() - started

    started = time.perf_counter()
    one("warm up")  # indexes the lineage and queues its vectors
    dense.wait_idle()
    waited = time.perf_counter() - started
    return [{**_questions(one, []), "variant": name, "window": 0, "compactions": 0, "feed_seconds": 0.0,
             "embed_wait_seconds": waited, "degraded": None} for name, setup in variants.items() if not setup()]


def _questions(ask_one: Any, final: list[Message]) -> dict[str, Any]:
    brief = [m for m in final if is_baton_message(m)]
    rows, tokens, seconds = [], [], []
    for fact in corpus.FACTS:
        answer, cost, took = ask_one(fact.question)
        tokens.append(cost)
        seconds.append(took)
        rows.append({"question": fact.question, "domain": fact.domain, "where": fact.where,
                     "shared": bool(fact.shared), "in_window": _holds(final, fact.answer),
                     "in_brief": _holds(brief, fact.answer),
                     "one_call": fact.answer in "\n".join(_strings(answer.get("hits"))), "found": _found(answer),
                     "top_score": _top(answer), "answer_score": _answer_score(answer, fact.answer)})
    absent = []
    for question in corpus.ABSENT:
        answer, cost, took = ask_one(question)
        tokens.append(cost)
        seconds.append(took)
        absent.append({"question": question, "found": _found(answer), "top_score": _top(answer)})
    own = []  # each fact asked in its own words (the stated value itself): in the window, or in the one call
    for fact in corpus.FACTS:
        answer, _cost, _took = ask_one(fact.answer)
        own.append({"query": fact.answer, "found": _holds(final, fact.answer) or
                    fact.answer in "\n".join(_strings(answer.get("hits")))})
    answered = [r for r in rows if r["in_window"] or r["one_call"]]
    return {"facts": len(rows), "answered": len(answered),
            "in_window": sum(r["in_window"] for r in rows), "in_brief": sum(r["in_brief"] for r in rows),
            "by_one_call": sum(r["one_call"] and not r["in_window"] for r in rows),
            "one_call_any": sum(r["one_call"] for r in rows),
            "shared_answered": sum(r in answered for r in rows if r["shared"]),
            "shared": sum(r["shared"] for r in rows),
            "absent": len(absent), "false_found": sum(a["found"] for a in absent), "own_words": sum(o["found"] for o in own), "own_rows": own,
            "tokens_mean": statistics.mean(tokens), "tokens_max": max(tokens),
            "p50_ms": 1000 * statistics.median(seconds), "p99_ms": 1000 * _p99(seconds),
            "rows": rows, "absent_rows": absent}


def _top(answer: dict[str, Any]) -> float | None:
    hits = answer.get("hits") or []
    return hits[0].get("score") if hits else None


def _answer_score(answer: dict[str, Any], text: str) -> float | None:
    """The score of the hit that carries the answer (the floor is chosen between these and absent questions')."""
    return next((hit.get("score") for hit in answer.get("hits") or [] if text in "\n".join(_strings(hit))), None)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def score_builtin(runtime: Any, session: corpus.Session, window: int) -> dict[str, Any]:
    """Hermes' built-in compressor (verbatim survivors only) and keep-recent on the same session."""
    from batontest.model_server import ModelServer, ScriptedPolicy

    with ModelServer(ScriptedPolicy([], auxiliary_answer=arms.STUB_SUMMARY), context_window=2_000_000,
                     model_name=arms.MODEL) as server:
        arm = arms.HermesArm(server.base_url, arms.MODEL, window, arms.AuxiliaryMeter())
        final, compactions = feed(arm, runtime, session)
    budget, kept = int(0.75 * window), []
    for message in reversed(session.messages):  # keep-recent: the newest messages that fit the same threshold
        budget -= runtime.count_chat({"messages": [message]}).tokens or 0
        if budget < 0:
            break
        kept.append(message)
    return {"window": window, "builtin_compactions": compactions,
            "builtin_in_window": sum(_holds(final, f.answer) for f in corpus.FACTS),
            "keep_recent_in_window": sum(_holds(kept, f.answer) for f in corpus.FACTS)}


def _variants(embedder: bool) -> dict[str, Any]:
    """Ranking variants asked on the same fed session (patched in this process only): the engine's as shipped; with
    an embedder, the exact lookups' places (none, one at 0 or 1), the rarity bound and the lexical weight 0.1 (the
    earlier sweep of the weight, plain RRF and whole-passage hits is in docs/recall.md)."""
    names = ("_fused", "LEXICAL_WEIGHT", "around", "LEXICAL_PLACES", "LEXICAL_PLACE_AT", "RARE_ROWS")
    kept = {name: getattr(search, name) for name in names}

    def shipped() -> None:
        for name, value in kept.items():
            setattr(search, name, value)

    def patched(**values: Any) -> Any:
        return lambda: shipped() or any(setattr(search, name, value) for name, value in values.items())

    if not embedder:
        return {"lexical": shipped}
    return {"hybrid (shipped)": shipped, "no lexical places": patched(LEXICAL_PLACES=0),
            "1 place at 0": patched(LEXICAL_PLACES=1, LEXICAL_PLACE_AT=0),
            "1 place at 1": patched(LEXICAL_PLACES=1, LEXICAL_PLACE_AT=1),
            "rare: <= 1 row": patched(RARE_ROWS=1), "rare: <= 20 rows": patched(RARE_ROWS=20),
            "restore": lambda: shipped() or True}


def run(quick: bool, builtin: bool = False, embedder_url: str | None = None,
        embedder_model: str = "all-MiniLM-L6-v2", embedder_path: str | None = None, retrieval: bool = False,
        vectors: Path | None = None, prefixes: tuple[str, str] = ("", ""), filler: int | None = None,
        weak_below: float | None = None, shipped_only: bool = False) -> dict[str, Any]:
    session = corpus.build_session(filler_turns=filler if filler is not None else 20 if quick else 80)
    runtime = arms.baton_runtime(QWEN3, None)
    if embedder_url:
        runtime.settings = replace(runtime.settings, embedder=EmbedderConfig(
            "openai", embedder_url, embedder_model, query_prefix=prefixes[0], passage_prefix=prefixes[1],
            weak_below=weak_below))
    elif embedder_path:  # in-process (the ``st`` backend: sentence-transformers installed beside the engine)
        runtime.settings = replace(runtime.settings, embedder=EmbedderConfig("st", path=embedder_path))
        embedder_url, embedder_model = embedder_path, Path(embedder_path).name
    if vectors is not None and runtime.embedder() is not None:  # after the runtime opened its own store: this one wins
        dense.keep_vectors_in(vectors)
    windows = WINDOWS[:1] if quick else WINDOWS
    variants = _variants(bool(embedder_url))
    if shipped_only:
        variants = dict(list(variants.items())[:1])
    result: dict[str, Any] = {
        "session_tokens": runtime.count_chat({"messages": list(session.messages)}).tokens,
        "messages": len(session.messages), "embedder": embedder_model if embedder_url else None,
        "baton": score_retrieval(runtime, session, variants) if retrieval else
        [row for w in windows for row in score_baton(runtime, session, w, variants)]}
    if builtin:
        result["builtin"] = [score_builtin(runtime, session, w) for w in windows]
    return result


def render(result: dict[str, Any]) -> list[str]:
    out = ["## Recall in the user's words", "",
           f"One session of {result['session_tokens']:,} tokens ({result['messages']} messages; code review, ops, "
           f"data work), {len(corpus.FACTS)} facts each asked once in other words, {len(corpus.ABSENT)} questions "
           "whose answer is absent (`benchmarks/recall/paraphrase_bench.py`).", "",
           f"Embedder: {result['embedder'] or 'none (lexical)'}.", "",
           "| window | ranking | compactions | answered | in the window (brief) | by one call | shared-word questions | "
           "false \"found\" | tokens per call mean / max | p50 / p99 ms | own words |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["baton"]:
        window = f"{r['window'] // 1024}K" if r["window"] else "none (retrieval)"
        out.append(f"| {window} | {r['variant']} | {r['compactions']} | {r['answered']} / {r['facts']} | "
                   f"{r['in_window']} ({r['in_brief']}) | {r['by_one_call']} | {r['shared_answered']} / "
                   f"{r['shared']} | {r['false_found']} / {r['absent']} | {r['tokens_mean']:.0f} / {r['tokens_max']} | "
                   f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f} | {r['own_words']} / {r['facts']} |")
    for r in result.get("builtin", []):
        out.append(f"| {r['window'] // 1024}K | built-in compressor / keep-recent (in window) | "
                   f"{r['builtin_compactions']} | {r['builtin_in_window']} / {r['keep_recent_in_window']} of "
                   f"{len(corpus.FACTS)} | | | | | | |")
    return [*out, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--builtin", action="store_true", help="also Hermes' built-in compressor (needs hermes-agent)")
    parser.add_argument("--embedder-url", help="an OpenAI-compatible embeddings server (e.g. embedding_server.py)")
    parser.add_argument("--embedder-model", default="all-MiniLM-L6-v2")
    parser.add_argument("--embedder-path", help="a sentence-transformers model directory, embedded in-process (st)")
    parser.add_argument("--retrieval", action="store_true", help="the ranking alone: the whole session compacted")
    parser.add_argument("--vectors", type=Path, help="keep the passages' vectors in this directory across runs")
    parser.add_argument("--query-prefix", default="", help="before each question (e5: 'query: ')")
    parser.add_argument("--passage-prefix", default="", help="before each stored line (e5: 'passage: ')")
    parser.add_argument("--filler-turns", type=int, help="filler turns around the facts (80; --quick 20; 0: the facts' "
                        "turns only, 6,251 lines: a slower model's whole lineage embedded in minutes)")
    parser.add_argument("--weak-below", type=float, help="the model's cosine floor (embedder weak_below)")
    parser.add_argument("--shipped-only", action="store_true", help="the engine's ranking only, no variants")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args.quick, args.builtin, args.embedder_url, args.embedder_model, args.embedder_path, args.retrieval,
                 args.vectors, (args.query_prefix, args.passage_prefix), args.filler_turns, args.weak_below,
                 args.shipped_only)
    print("\n".join(render(result)))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
