"""Settings and decisions stated in tool results, kept in the brief (issue 32 item 3): what the rule keeps and costs.

    .venv/bin/python benchmarks/compaction/stated_lines_bench.py

The rule (``baton_engine.compaction.anchors.stated_lines``) is measured two ways:

- on the paraphrase corpus's session (``paraphrase_corpus.build_session``; 22 facts stated inside long
  ``read_file`` / ``terminal`` / ``search_files`` results among ~13k filler lines): how many of those facts it keeps,
  how many other lines it flags, and, with the whole session compacted as one region, how many facts' answers the
  brief's "Compacted detail" section carries at the default brief budget (1,200 Qwen3 tokens) with and without
  stated lines, and what the stated lines cost there;
- on real files as ``read_file`` would return them (this repository's sources and configs, and the Python
  standard library's modules): lines flagged per 1,000, i.e. what a long read of ordinary code costs the brief.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

from benchmarks.harness.paraphrase_corpus import FACTS, build_session  # noqa: E402

from baton_engine.compaction import continuity  # noqa: E402
from baton_engine.compaction.anchors import extract_anchors, stated_lines  # noqa: E402
from batontest.assets import hf_backend, qwen3_dir  # noqa: E402

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("keeps the 7 facts stated as commented settings of 22, flags none of 12,954 other "
               "lines; the brief carries 9 of 22 answers (2 before) for 216 tokens"),
    "target": "stated lines kept at a small cost to the brief (figures: docs/recall.md)",
    "findings": None,
    "test": None,
}

BRIEF = 1_200  # the brief_max_tokens default


def tool_lines(messages: list[dict]) -> list[str]:
    out: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            data = json.loads(message["content"])
            text = data.get("content") or data.get("output") or "\n".join(m["content"] for m in data.get("matches", []))
            out += text.split("\n")
    return out


def real_lines() -> dict[str, list[str]]:
    sources = {"this repository": [p for pattern in ("**/*.py", "**/*.toml", "**/*.ini", "**/*.sh", "**/*.yaml")
                                   for p in REPO.glob(pattern) if not any(part.startswith(".") for part in
                                                                        p.relative_to(REPO).parts)],
               "python stdlib": sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))}
    return {name: [line for path in paths for line in path.read_text(errors="replace").split("\n")]
            for name, paths in sources.items()}


def main() -> None:
    backend = hf_backend(qwen3_dir())

    def count(text: str) -> int:
        return backend.count_text(text).tokens

    session = list(build_session().messages)
    facts = [f for f in FACTS if f.where != "user"]
    anchors = extract_anchors(session)
    kept = [f for f in facts if any(f.answer in line.text for line in anchors.stated)]
    other = [line for line in anchors.stated if not any(f.answer in line.text for f in facts)]
    print(f"corpus: {len(kept)} / {len(facts)} tool-result facts kept as stated lines "
          f"({', '.join(f.answer for f in kept)}); {len(other)} of {len(tool_lines(session)):,} other lines flagged")
    section = continuity.collect(session, continuity.Recall(None, lambda: ()), BRIEF, count)
    lines = list(section.lines)
    shown = lines[lines.index(continuity.ANCHORS_HEADER) + 1:] if continuity.ANCHORS_HEADER in lines else []
    stated = [line for line in lines if line.startswith("Stated in")]
    share = int(BRIEF * continuity.ANCHORS_SHARE)
    before = dataclasses.replace(anchors, stated=()).render(share, count)
    print(f"brief {BRIEF} (anchors' share {share}): the section costs {section.tokens} tokens; tool-result facts "
          f"answered in it {sum(f.answer in section.text for f in facts)} (without stated lines "
          f"{sum(f.answer in chr(10).join(before) for f in facts)}); {len(stated)} stated lines cost "
          f"{count(chr(10).join(stated)) if stated else 0} tokens; other anchor lines {len(shown)} "
          f"(without stated lines {len(before)})")
    for name, lines in real_lines().items():
        hits = [line for line in lines if stated_lines(line)]
        print(f"{name}: {len(hits)} of {len(lines):,} lines flagged ({1000 * len(hits) / max(len(lines), 1):.2f} "
              f"per 1,000)")


if __name__ == "__main__":
    main()
