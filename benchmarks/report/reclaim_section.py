"""The report's "Reclamation and the prompt cache" section, from ``reclaim.json`` (``reclaim_bench.py``, run on Hermes
0.22's interface apart from ``run.py``): its table, its targets, and the section spliced into an existing REPORT.md.

Why its own module: ``report/render.py`` renders it beside the others when ``reclaim.json`` is there, and
``reclaim_bench.py`` splices it into the committed REPORT.md after a run; neither imports the benchmark (no circle).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HEADING = "## Reclamation and the prompt cache (`benchmarks/compaction/reclaim_bench.py`)"
RATIOS = ("0.1", "0.25", "0.5")
GOAL_WINDOWS = (131_072, 200_000)
GOAL_RATIOS = ("0.1", "0.25")
SEND_SHARE = 0.6
WITHOUT, WITH = "baton", "baton reclaim"


def _k(window: int) -> str:
    """A window as people name it: 65,536 is 64K, 200,000 is 200K."""
    return f"{window // 1024}K" if window % 1024 == 0 else f"{window // 1000}K"


def _rows(reclaim: dict[str, Any], window: int) -> dict[str, dict[str, Any]]:
    return {row["arm"]: row for row in reclaim["rows"] if row["window"] == window}


def targets(reclaim: dict[str, Any] | None) -> list[tuple[str, bool | None, str]]:
    """(target, met?, figure) for the Targets table; none without a run."""
    if not reclaim:
        return []
    found = []
    windows = sorted({row["window"] for row in reclaim["rows"]})
    for window in [w for w in windows if w in GOAL_WINDOWS]:
        rows = _rows(reclaim, window)
        if WITH not in rows:
            continue
        for ratio in GOAL_RATIOS:
            best = min(rows.values(), key=lambda row: row["cost"][ratio])
            found.append((f"Baton with reclamation the lowest cost at {_k(window)}, r = {ratio}",
                          best["arm"] == WITH, f"{rows[WITH]['cost'][ratio]:,} (lowest: {best['arm']} "
                                                f"{best['cost'][ratio]:,})"))
    for window in windows:
        rows = _rows(reclaim, window)
        if WITH not in rows or WITHOUT not in rows:
            continue
        share = rows[WITH]["sent"] / max(rows[WITHOUT]["sent"], 1)
        fewer = rows[WITH]["compactions"] < rows[WITHOUT]["compactions"]
        found.append((f"prompt tokens sent <= {SEND_SHARE}x without reclamation, fewer compactions, at "
                      f"{_k(window)}", share <= SEND_SHARE and fewer,
                      f"{share:.2f}x, {rows[WITH]['compactions']} vs {rows[WITHOUT]['compactions']} compactions"))
        found.append((f"no needle found less often with reclamation, at {_k(window)}",
                      rows[WITH]["needles_found"] >= rows[WITHOUT]["needles_found"],
                      f"{rows[WITH]['needles_found']} vs {rows[WITHOUT]['needles_found']} of {rows[WITH]['needles']}"))
    by_window: dict[int, dict[str, dict[str, Any]]] = {}
    for row in (reclaim.get("paraphrase") or {}).get("rows", []):
        by_window.setdefault(row["window"], {})[row["arm"]] = row
    for window, rows in sorted(by_window.items()):
        if WITH in rows and WITHOUT in rows:
            lost = sorted(set(rows[WITHOUT]["answered_questions"]) - set(rows[WITH]["answered_questions"]))
            found.append((f"no paraphrased fact answered less often with reclamation, at {_k(window)}", not lost,
                          f"{rows[WITH]['answered']} vs {rows[WITHOUT]['answered']} of {rows[WITH]['facts']}"
                          + (f"; lost: {len(lost)}" if lost else "")))
    return found


def render(reclaim: dict[str, Any] | None) -> list[str]:
    if not reclaim:
        return []
    out = [HEADING, "",
           f"{reclaim['turns']} turns of the growing tool-heavy session, fed as Hermes "
           f"{reclaim.get('hermes') or '0.22'} feeds an engine (`should_compress`, `compress`, else "
           "`prune_tool_results_only` after tool results); the prefix cache simulated as vLLM's (16-token blocks, a "
           "hit up to the first changed message); cost = uncached + r x cached prompt tokens; decode load = the sum "
           "of context length x tokens generated; needles found in the final context or by one `baton_recall` "
           f"search. One run, load {', '.join(f'{x:.1f}' for x in reclaim.get('load') or [])}.", "",
           "| window | arm | prompt tokens sent | uncached (prefill) | compactions | prunes | cache breaks | "
           + " | ".join(f"cost r={r}" for r in RATIOS) + " | decode load | needles found |",
           "|---" * (9 + len(RATIOS)) + "|"]
    for row in reclaim["rows"]:
        out.append(f"| {_k(row['window'])} | {row['arm']} | {row['sent']:,} | {row['uncached']:,} | "
                   f"{row['compactions']} | {row['prunes']} | {row['breaks']} | "
                   + " | ".join(f"{row['cost'][r]:,}" for r in RATIOS)
                   + f" | {row['decode']:,} | {row['needles_found']}/{row['needles']} |")
    paraphrase = reclaim.get("paraphrase")
    if paraphrase:
        out += ["", f"The paraphrase corpus (`paraphrase_corpus.py`, each fact asked once in other words; embedder "
                    f"{paraphrase['embedder'] or 'none: lexical'}), fed the same way:", "",
                "| window | arm | prunes | compactions | answered | in the window | by one call | false \"found\" |",
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {_k(r['window'])} | {r['arm']} | {r['prunes']} | {r['compactions']} | {r['answered']} / "
                f"{r['facts']} | {r['in_window']} | {r['by_one_call']} | {r['false_found']} / {r['absent']} |"
                for r in paraphrase["rows"]]
    declined = [f"{_k(row['window'])}: {row['declined']}" for row in reclaim["rows"] if row.get("declined")]
    if declined:
        out += ["", "Prunes Baton declined, by reason: " + "; ".join(declined) + "."]
    out += ["", "| target | verdict | measured |", "|---|---|---|"]
    out += [f"| {t} | {'met' if ok else 'NOT met'} | {figure} |" for t, ok, figure in targets(reclaim)]
    return [*out, ""]


def splice(report: Path, reclaim: dict[str, Any]) -> None:
    """Replace the section in ``report`` (or put it before the Findings) without re-running ``run.py``."""
    text = report.read_text(encoding="utf-8") if report.is_file() else ""
    section = "\n".join(render(reclaim))
    if HEADING in text:
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    elif "\n## Findings" in text:
        at = text.index("\n## Findings") + 1
        text = text[:at] + section + "\n" + text[at:]
    else:
        text = text + "\n" + section
    report.write_text(text, encoding="utf-8")
