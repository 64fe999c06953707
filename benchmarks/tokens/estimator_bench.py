"""How far an estimator that is not the route's own tokenizer is off, on real text of each kind.

    .venv/bin/python benchmarks/tokens/estimator_bench.py

The route's tokenizer is Qwen3's (the real tokenizer the project ships, ``assets/tokenizers/qwen3``). Two
estimators stand in for it when it is not known: the rough chars/4 estimate (Hermes' own, ``tokens/rough.py``)
and tiktoken o200k (a text-exact tokenizer of another family). Each is run on real text:

- code: this repository's own Python source (``baton_engine/``), file by file;
- identifiers: the names defined in that source (functions, classes, constants), one per line;
- numbers: the numeric cells of this repository's benchmark figures (``benchmarks/results/*.json``), or the
  numbers in its reports when no JSON is there;
- prose: this repository's docs (``docs/*.md``);
- CJK: the Chinese, Japanese and Korean sample texts of CPython's own codec tests
  (``test/cjkencodings/*-utf8.txt`` of the running interpreter; skipped when the interpreter has no tests).

Error = estimate / Qwen3 count - 1 per text (negative: the estimate is low, the dangerous side); "whole" is the
kind's total. The margin a rough count keeps (``tokens/rough.estimate_margin``: ``ROUGH_MARGIN_SHARE`` of the
estimate plus a token per digit and non-ASCII character) is chosen so that no kind undercounts as a whole; the
"rough + its margin" rows show it. The figures are in benchmarks/FINDINGS.md.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.tokens.tokens_bench import raw_tiktoken_encode, raw_tokenizers_encode  # noqa: E402

from baton_engine.tokens.rough import dense_characters, estimate_margin, estimate_tokens_rough  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("chars/4 against Qwen3: numbers -75.0%, CJK -59.4%, identifiers -11.3%; with the margin"
               " numbers +0.7%, code +48.0%"),
    "target": "no kind of text undercounted as a whole with the rough margin (ROUGH_MARGIN_SHARE 0.4)",
    "findings": "Figures behind the code's constants",
    "test": "tests/bench/test_quick_run.py",
}

CHUNK = 4000  # characters per sample: a tool result's size, so one odd line does not dominate a whole file


def _chunks(text: str) -> list[str]:
    return [text[i:i + CHUNK] for i in range(0, len(text), CHUNK) if text[i:i + CHUNK].strip()]


def code_texts() -> list[str]:
    return [chunk for path in sorted((REPO / "baton_engine").rglob("*.py")) for chunk in _chunks(path.read_text())]


def identifier_texts() -> list[str]:
    names: list[str] = []
    for path in sorted((REPO / "baton_engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return _chunks("\n".join(names))


def number_texts() -> list[str]:
    numbers: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            numbers.append(repr(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted((REPO / "benchmarks" / "results").glob("*.json")):
        walk(json.loads(path.read_text()))
    if not numbers:
        for path in sorted((REPO / "benchmarks" / "results").glob("*.md")):
            numbers.extend(re.findall(r"\d[\d,.]*", path.read_text()))
    return _chunks(" ".join(numbers))


def prose_texts() -> list[str]:
    return [chunk for path in sorted((REPO / "docs").glob("*.md")) for chunk in _chunks(path.read_text())]


def cjk_texts() -> list[str]:
    folder = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    return [chunk for path in sorted(folder.glob("*-utf8.txt"))
            for chunk in _chunks(path.read_bytes().decode("utf-8", "replace"))] if folder.is_dir() else []


KINDS: dict[str, Callable[[], list[str]]] = {
    "code": code_texts, "identifiers": identifier_texts, "numbers": number_texts, "prose": prose_texts,
    "CJK": cjk_texts,
}


def rough_with_margin(text: str) -> int:
    """The rough estimate with the margin a rough count keeps (``rough.estimate_margin``, no configured floor)."""
    estimate = estimate_tokens_rough(text)
    return estimate + estimate_margin(estimate, 0, dense_characters(text))


def run() -> dict[str, dict[str, dict[str, float]]]:
    qwen3 = raw_tokenizers_encode()
    estimators = {"rough chars/4": estimate_tokens_rough, "rough + its margin": rough_with_margin,
                  "tiktoken o200k": raw_tiktoken_encode()}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for kind, texts_of in KINDS.items():
        texts = texts_of()
        if not texts:
            continue
        truth = [qwen3(text) for text in texts]
        for name, estimate in estimators.items():
            errors = sorted(estimate(text) / real - 1 for text, real in zip(texts, truth) if real > 0)
            total = sum(estimate(text) for text in texts) / sum(truth) - 1
            results.setdefault(name, {})[kind] = {
                "texts": len(errors), "qwen3_tokens": sum(truth), "total": total, "worst": errors[0],
                "p05": errors[len(errors) // 20], "median": errors[len(errors) // 2]}
    return results


def render(results: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """The report's section: each estimator's error against Qwen3 per kind of text."""
    lines = ["## Estimators against the route's tokenizer (`benchmarks/tokens/estimator_bench.py`)", "",
             "Error of a count that is not the route's own tokenizer's, against the real Qwen3 tokenizer, on real "
             "text in 4,000-character samples (negative: low, the dangerous side). `rough + its margin` is what a "
             "rough count keeps (`tokens/rough.estimate_margin`); tiktoken o200k is a text-exact tokenizer of "
             "another family.", "",
             "| estimator | kind | texts | Qwen3 tokens | whole | worst text | p5 | median |",
             "|---|---|---|---|---|---|---|---|"]
    for name, kinds in results.items():
        for kind, row in kinds.items():
            lines.append(f"| {name} | {kind} | {row['texts']} | {row['qwen3_tokens']:,} | {row['total']:+.1%} | "
                         f"{row['worst']:+.1%} | {row['p05']:+.1%} | {row['median']:+.1%} |")
    return [*lines, ""]


def main() -> None:
    print("\n".join(render(run())))


if __name__ == "__main__":
    main()
