"""The demo (``demo/hermes_demo.py``) end to end: the real Hermes loop with Baton, and ``--compare`` (the same
scripted session under Hermes' built-in compressor) whose side-by-side table must state what the runs did:
every figure is checked against the per-call lines each run printed as it went."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from batontest.hermes_run import require_hermes

DEMO_TIMEOUT = 900  # seconds for one demo process (--compare runs three sessions)
# the demo's own bound, not pytest's default 300 s (the --compare run took longer at load average 10)
pytestmark = [pytest.mark.hermes, pytest.mark.timeout(DEMO_TIMEOUT + 60)]
REPO = Path(__file__).resolve().parents[2]
CALL = re.compile(r"^\s+#(\d+)\s+prompt\s+([\d,]+)/")
SECTIONS = ("Baton + the real Hermes agent loop", "Hermes' built-in compressor, the same session")


def run_demo(*args: str) -> str:
    require_hermes()
    env = {**os.environ, "COLUMNS": "240", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error"}
    env.pop("HERMES_HOME", None)
    done = subprocess.run([sys.executable, str(REPO / "demo" / "hermes_demo.py"), *args], capture_output=True,
                          text=True, timeout=DEMO_TIMEOUT, env=env, cwd=REPO)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def narrated(section: str) -> dict[str, int]:
    """What a run's own per-call lines show: model calls, refused ones, compactions, the largest prompt."""
    calls = [line for line in section.splitlines() if CALL.match(line)]
    return {"model calls": len(calls), "requests refused by the server": sum("REJECTED" in c for c in calls),
            "compactions": len(re.findall(r"^\s+compaction \d+: ", section, re.MULTILINE)),
            "largest prompt": max(int(CALL.match(c).group(2).replace(",", "")) for c in calls)}


def table_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 4 and cells[0]:
            rows[cells[0]] = cells[1:]
    return rows


def test_compare_prints_both_outcomes_from_the_runs(tmp_path: Path) -> None:
    out, table_text = run_demo("--compare", "--report", str(tmp_path / "report.html")).split(
        "Side by side: the same scripted session")
    baton, same_config, hand_cap = out.split(SECTIONS[1])  # Baton's run, then the built-in's two
    assert SECTIONS[0] in baton
    table = table_rows(table_text)
    assert table["compacts at (request tokens)"][0] == "20000"  # the setting, above this frame's floor: not raised
    assert "(the setting was raised to it)" not in baton
    for column, section in enumerate((baton, same_config, hand_cap)):
        for label, value in narrated(section).items():
            assert table[label][column] == str(value), (label, column, table[label])
    # Baton: no refusal, several compactions, no summary call, the round-1 line recalled after them
    assert table["requests refused by the server"][0] == "0" and int(table["compactions"][0]) >= 3
    assert table["LLM calls for summaries"][0] == "0"
    assert table["round-1 line 'r1i0 L003' recalled by the model"] == ["yes", "no", "no"]
    assert "baton_recall search 'r1i0 L003':" in baton
    # the session's report, written outside the demo's temporary directory, counts what the run narrated
    report = re.search(r"session report \((\d+) requests, (\d+) compactions; open it in a browser\): (\S+)", baton)
    assert report is not None and Path(report.group(3)) == tmp_path / "report.html"
    assert "<svg" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert [int(report.group(1)), int(report.group(2))] == [int(table["model calls"][0]),
                                                            int(table["compactions"][0])]
    # the built-in with the same config.yaml: the 65,536-token output default is refused at once
    assert int(table["requests refused by the server"][1]) == int(table["model calls"][1]) > 0
    assert table["last request answered"] == ["yes", "no", "yes"]
