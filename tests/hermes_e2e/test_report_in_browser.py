"""``baton report`` of a REAL Hermes session (hermes-agent 0.19.0 ``AIAgent``, Baton as its context engine),
opened in a real headless Chromium (Debian's ``chromium``, driven by Playwright; never a downloaded browser).

The session carries planted credentials (in the user's turn and in tool results) and bulky tool output; the page
must render with no console error and no network request, its chart must show one bar per model request the
provider received (with the provider's own prompt sizes) and one marker per compaction, and none of the session's
text or secrets may appear in the page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.baton_cli import run_baton
from batontest.hermes_run import WINDOW, Scenario, run_scenario
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script
from batontest.secrets_corpus import SAMPLES_BY_NAME

pytestmark = [pytest.mark.hermes, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
# The flags this machine's closed network needs (no background fetches, no QUIC, no first-run work).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
PLANTED = (SAMPLES_BY_NAME["openai_project"], SAMPLES_BY_NAME["github_classic_pat"])
USER_SECRET = SAMPLES_BY_NAME["anthropic"]
TURN = f"Analyse the inventory findings round by round; the staging key is {USER_SECRET.text}"
TRANSCRIPT_LINE = re.compile(r"r\d+i\d+ L\d{3}:")  # every line of a scripted tool payload starts like this
FINAL_ANSWER = "Done: every round is recorded."


def require_browser() -> Any:
    """Playwright's sync API, or a skip (a failure when BATON_REQUIRE_BROWSER says CI must have it)."""
    required = os.environ.get("BATON_REQUIRE_BROWSER", "").lower() in ("1", "true")
    problem = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = "needs the playwright package (tox env hermes installs it)"
    if problem is None and not CHROMIUM.is_file():
        problem = f"needs Debian's chromium at {CHROMIUM}: apt-get install -y chromium chromium-driver"
    if problem is not None:
        if required:
            pytest.fail(problem)
        pytest.skip(problem)
    return sync_playwright


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scenario, ModelServer]:
    require_browser()
    steps = tool_heavy_script(18, planted=[s.text for s in PLANTED], capture_every=4)
    with ModelServer(ScriptedPolicy(steps, final_answer=FINAL_ANSWER), context_window=WINDOW) as server:
        run = run_scenario(tmp_path_factory.mktemp("report"), server, turns=[TURN], baton={
            "tokenizer": {"backend": "hf", "path": str(qwen3_dir())}, "fallback_token_threshold": 12_000,
            "auto_checkpoint_on_end": False})
    assert run.result["turns"][0]["final_response"] == FINAL_ANSWER
    return run, server


def secrets() -> list[str]:
    return [secret for sample in (*PLANTED, USER_SECRET) for secret in sample.secrets]


def test_report_renders_the_session_in_chromium(session: tuple[Scenario, ModelServer], tmp_path: Path) -> None:
    run, server = session
    sent = "\n".join(server.iter_payload_text())
    assert all(secret in sent for secret in secrets())  # the secrets really were in the session
    compactions = run.result["compression_count"]
    assert compactions >= 2 and not server.rejections

    page_path = tmp_path / "report.html"
    answer = run_baton("report", "--html", str(page_path), "--json", cwd=run.project)
    assert answer.code == 0, answer.stderr
    data = answer.data
    assert len(data["requests"]) == len(server.main_requests)
    assert len(data["compactions"]) == compactions

    seen_errors: list[str] = []
    requested: list[str] = []
    with require_browser()() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            page = context.new_page()
            page.on("console", lambda m: seen_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: seen_errors.append(str(exc)))
            page.on("request", lambda r: requested.append(r.url))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            bars = page.locator("svg#chart rect.request")
            prompts = [int(v) for v in bars.evaluate_all("els => els.map(e => e.dataset.prompt)")]
            reported = [int(v) for v in bars.evaluate_all("els => els.map(e => e.dataset.reported)")]
            marks = page.locator("svg#chart line.compaction").count()
            handoffs = page.locator("svg#chart line.compaction").evaluate_all(
                "els => els.map(e => e.dataset.handoff)")
            shown_rows = page.locator("table#compactions tbody tr").count()
            verdict = page.locator("#verdict").inner_text()
            text, html = page.locator("body").inner_text(), page.content()
            box = page.locator("svg#chart").bounding_box()
        finally:
            context.close()

    assert not seen_errors, seen_errors
    assert requested == [page_path.as_uri()]  # the page fetched nothing
    assert box is not None and box["width"] > 300 and box["height"] > 100  # the chart really rendered
    # one bar per model request, drawn at the size the provider itself counted (Baton counts exactly here)
    truth = [r.prompt_tokens for r in server.main_requests]
    assert prompts == truth and reported == truth
    assert marks == shown_rows == compactions
    stored = {r["id"] for r in run.handoffs() if (r.get("automation") or {}).get("trigger") == "pre_compaction"}
    assert set(handoffs) == stored
    assert f"{len(truth)} requests, {compactions} compactions" in verdict
    for secret in secrets():
        assert secret not in html and secret not in text
    assert "inventory findings" not in html and not TRANSCRIPT_LINE.search(html)
    for path in (run.project / ".baton" / "metrics").iterdir():  # nor in the log the page was made from
        body = path.read_text(encoding="utf-8")
        assert not TRANSCRIPT_LINE.search(body) and all(secret not in body for secret in secrets()), path.name
