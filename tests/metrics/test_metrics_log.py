"""The session metrics log: written only in an initialised project, bounded on disk, never raising, and read
back as the report's data (requests with their reported sizes, compactions, derived mode and breaker changes)."""

from __future__ import annotations

import copy
import gc
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from baton_engine.errors import NotFoundError
from baton_engine.handoff.owner import Scope
from baton_engine.metrics import log as metrics_log
from baton_engine.metrics import read
from baton_engine.metrics.log import MetricsLog, Retention
from baton_engine.operations.doctor import doctor
from baton_engine.operations.maintenance import report
from baton_engine.prompt_cache import CacheBook
from batontest.baton_cli import run_baton
from batontest.hermes_home import initialised_project
from batontest.metrics_logs import RETENTION

HEADER = {"owner": {"platform": "cli", "conversation_id": None}, "model": "qwen3-local", "window": 1000}


def request(log: MetricsLog, prompt: int, *, mode: str = "exact", breaker: str = "closed", **extra: Any) -> int:
    return log.emit("request", prompt=prompt, mode=mode, source="hf:qwen3", fallback=extra.pop("fallback", None),
                    window=1000, window_source="hermes context_length", cap_asked=900, cap_sent=1000 - prompt,
                    action="lower_cap_to", short=False, shortened=False, breaker=breaker, ms=0.1, **extra)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return initialised_project(tmp_path / "project")


def started(project: Path, session_id: str = "session-1", **header: Any) -> MetricsLog:
    return MetricsLog.start(project, session_id=session_id, header={**HEADER, **header}, retention=RETENTION)


def test_nothing_is_written_outside_an_initialised_project(tmp_path: Path) -> None:
    log = MetricsLog.start(tmp_path, session_id="s", header=HEADER, retention=RETENTION)
    assert log.path is None
    assert request(log, 10) == 1  # numbered all the same, written nowhere
    assert list(tmp_path.iterdir()) == []


def test_events_are_json_lines_under_baton_metrics_with_the_header_first(project: Path) -> None:
    log = started(project)
    request(log, 100)
    log.emit("usage", request=1, reported=103, route_check={"verdict": "confirmed"})
    path = Path(log.path)
    assert path.parent == project / ".baton" / "metrics"
    assert (path.parent / ".gitignore").read_text() == "*\n"  # local logs, never committed with the handoffs
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["ev"] for e in lines] == ["session", "request", "usage"]
    assert lines[0]["owner"] == HEADER["owner"] and lines[0]["session_hash"].startswith("sha256:")
    assert "session-1" not in path.read_text()  # the raw session id is stored hashed, as in handoffs


def test_a_failed_write_is_dropped_and_logged_once(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    (project / ".baton" / "metrics").write_text("not a directory")
    log = started(project)
    with caplog.at_level(logging.WARNING, logger="baton_engine.metrics"):
        for prompt in (1, 2, 3):
            request(log, prompt)
    assert log.dropped == 3
    assert len([r for r in caplog.records if "metrics event dropped" in r.message]) == 1


def test_a_symlinked_metrics_dir_or_log_is_never_followed(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".baton" / "metrics").symlink_to(outside, target_is_directory=True)
    log = started(project)
    request(log, 1)
    assert log.dropped == 1 and list(outside.iterdir()) == []
    (project / ".baton" / "metrics").unlink()
    log = started(project)
    target = outside / "victim"
    Path(log.path).parent.mkdir()
    Path(log.path).symlink_to(target)
    request(log, 1)
    assert log.dropped == 1 and not target.exists()


def test_an_oversized_event_is_dropped_not_written(project: Path) -> None:
    log = started(project)
    request(log, 1)
    log.emit("request", note="x" * metrics_log.MAX_LINE_BYTES)
    assert log.dropped == 1 and len(Path(log.path).read_text().splitlines()) == 2


def test_a_long_session_stays_within_two_segments_and_keeps_the_newest(project: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_log, "SEGMENT_BYTES", 4096)
    log = started(project)
    for n in range(1, 301):
        request(log, n)
    path = Path(log.path)
    files = sorted(path.parent.glob(f"{path.name}*"))
    assert [f.name for f in files] == [path.name, path.name + ".1"]
    assert sum(f.stat().st_size for f in files) <= 2 * 4096
    data = read.report_data(read.sessions(project / ".baton")[0])
    numbers = [r["n"] for r in data["requests"]]
    assert numbers[-1] == 300 and numbers == list(range(numbers[0], 301))  # the newest, contiguous
    assert data["earlier_requests_rotated_out"] == numbers[0] - 1 > 0
    assert data["header"]["model"] == "qwen3-local"  # every segment restates whose log it is


def _old_session(directory: Path, name: str, *, days: float, size: int = 10, page: bool = True) -> Path:
    """A session log another process wrote ``days`` ago (its rotated segment and page beside it)."""
    directory.mkdir(exist_ok=True)
    log = directory / f"{name}.jsonl"
    files = [log, log.with_name(log.name + ".1"), *([log.with_suffix(".html")] if page else [])]
    moment = time.time() - days * 86400
    for path in files:
        path.write_bytes(b"{}\n".ljust(size, b" "))
        os.utime(path, (moment, moment))
    return log


def test_a_gateway_with_more_live_sessions_than_ever_kept_before_loses_none(project: Path) -> None:
    """30 sessions live at once (a gateway): every one keeps its log, even with a total bound they exceed."""
    tight = Retention(max_age_days=1, max_total_mb=1, live_hours=1)
    logs = []
    for n in range(30):
        log = MetricsLog.start(project, session_id=f"user-{n}", header=HEADER, retention=tight)
        for i in range(1, 151):  # ~41 KB each: 30 of them exceed the 1 MiB bound
            request(log, i)
        logs.append(log)
    for log in logs:  # an hour later than their last write, and still held: never retired
        os.utime(log.path, (time.time() - 7200, time.time() - 7200))
    MetricsLog.start(project, session_id="user-30", header=HEADER, retention=tight)
    assert sum(Path(log.path).stat().st_size for log in logs) > 1024 * 1024
    assert all(Path(log.path).is_file() for log in logs)
    del logs, log
    gc.collect()  # the sessions ended: their engines let go of the logs
    retired = metrics_log.retire(project / ".baton" / "metrics", tight)
    assert len(retired) >= 1 and sum(p.stat().st_size for p in (project / ".baton" / "metrics").glob("*.jsonl")) \
        <= 1024 * 1024


def test_logs_are_retired_by_age_and_total_size_never_one_written_within_the_live_window(project: Path) -> None:
    directory = project / ".baton" / "metrics"
    aged = _old_session(directory, "20250101T000000Z--aaaaaaaaaaaa", days=40)
    big_old = _old_session(directory, "20260101T000000Z--bbbbbbbbbbbb", days=5, size=700 * 1024, page=False)
    big_newer = _old_session(directory, "20260102T000000Z--cccccccccccc", days=4, size=700 * 1024, page=False)
    elsewhere_live = _old_session(directory, "20260103T000000Z--dddddddddddd", days=0.5, size=700 * 1024, page=False)
    retention = Retention(max_age_days=30, max_total_mb=4, live_hours=24)
    retired = metrics_log.retire(directory, retention)
    # over 30 days: gone with its rotated segment and page; the rest (3 x 1.4 MiB) is over 4 MiB: the oldest goes
    assert retired == [aged, big_old]
    assert not any(path.exists() for path in (aged, aged.with_name(aged.name + ".1"), aged.with_suffix(".html")))
    assert big_newer.exists() and elsewhere_live.exists()
    # another process's session written 12 hours ago is live: kept even when only it is over the bound
    assert metrics_log.retire(directory, Retention(max_age_days=1, max_total_mb=1, live_hours=24)) == [big_newer]
    assert elsewhere_live.exists()


def test_a_held_log_is_live_however_idle_and_so_is_an_engines_copy(project: Path) -> None:
    """An idle gateway session (last written days ago) keeps its log while its engine holds it, copy included
    (Hermes 0.19 deep-copies the engine)."""
    log = started(project)
    request(log, 1)
    os.utime(log.path, (time.time() - 40 * 86400,) * 2)
    copied = copy.deepcopy(log)
    del log
    gc.collect()
    strict = Retention(max_age_days=1, max_total_mb=1, live_hours=1)
    assert metrics_log.retire(project / ".baton" / "metrics", strict) == [] and Path(copied.path).is_file()
    path = Path(copied.path)
    del copied
    gc.collect()
    assert metrics_log.retire(project / ".baton" / "metrics", strict) == [path]


def test_report_data_joins_usage_and_derives_mode_and_breaker_changes(project: Path) -> None:
    log = started(project)
    request(log, 100)
    log.emit("usage", request=1, reported=100, route_check={"verdict": "confirmed", "ratio": 1.0})
    request(log, 200, mode="rough+margin", breaker="open", fallback="CircuitOpen")
    request(log, 300, breaker="closed")
    log.emit("compaction", request=3, before=300, after=120, kept=2, stubbed=1, recallable=9, handoff="h-1")
    log.emit("aux_request", prompt=5)
    data = read.report_data(read.sessions(project / ".baton")[0])
    assert [r["reported"] for r in data["requests"]] == [100, None, None]
    assert data["mode_changes"] == [{"request": 2, "from": "exact", "to": "rough+margin", "reason": "CircuitOpen"},
                                    {"request": 3, "from": "rough+margin", "to": "exact", "reason": None}]
    assert [(c["from"], c["to"]) for c in data["breaker_events"]] == [("closed", "open"), ("open", "closed")]
    assert data["compactions"][0]["before"] == 300 and data["compactions"][0]["handoff"] == "h-1"
    summary = data["summary"]
    assert (summary["requests"], summary["auxiliary_requests"], summary["compactions"]) == (3, 1, 1)
    assert summary["peak_prompt"] == 300 and summary["route_verdict"] == "confirmed"


def test_a_state_is_logged_when_it_changes_and_the_report_shows_the_latest(project: Path) -> None:
    log = started(project)
    figure = {"offered": ["baton_recall"], "schema_tokens": 120, "counted_by": "hf:qwen3"}
    assert log.emit_changed("tools", **figure) == 1 and log.emit_changed("tools", **figure) is None
    request(log, 10)
    assert log.emit_changed("tools", **{**figure, "schema_tokens": 130}) == 2
    data = read.report_data(read.sessions(project / ".baton")[0])
    assert data["tools"]["schema_tokens"] == 130 and data["summary"]["tool_schema_tokens"] == 130
    assert [r["n"] for r in data["requests"]] == [1]
    human = run_baton("report", cwd=project)
    assert human.code == 0 and "Baton's tool schemas 130 tokens per request" in human.stdout
    assert read.report_data(read.sessions(project / ".baton")[0])["summary"]["tool_schema_tokens"] == 130
    without = started(project, "other")
    request(without, 5)
    assert report(project, "other")["summary"]["tool_schema_tokens"] is None  # not measured: said, not guessed


CACHE_KEYS = ("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_prompt_tokens", "responses",
              "responses_reporting_cache", "reclaimed_tokens", "reclaimed_exact", "prunes_committed", "prunes_declined")


def test_report_accounts_for_the_prompt_cache_and_every_prune_as_status_does(project: Path) -> None:
    """Issue 44: sent, read from the cache, uncached, reclaimed (exact or not), prunes committed and declined by
    reason; the same figures the engine's status gets from its ``CacheBook`` fed the same responses and prunes."""
    log, book = started(project), CacheBook()
    responses = [(1_000, 0, 600), (1_400, 1_000, 0), (1_900, None, 0), (1_300, 1_200, 0)]  # 3rd: no cache field
    for n, (sent, cached, written) in enumerate(responses, start=1):
        request(log, sent - 10)
        log.emit("usage", request=n, reported=sent, cache_read=cached, cache_write=written or None,
                 uncached=sent - cached if cached is not None else None)
        book.observe(sent, cached, written)
    log.emit("prune", request=2, committed=False, reason="below_min_reclaim", net=None)
    log.emit("prune", request=3, committed=True, reason="pays", before=1_900, after=1_250, reclaimed=650, exact=True,
             messages=3, first_changed=4, net=5_000)
    log.emit("prune", request=4, committed=False, reason="cache_cost", net=-40)
    log.emit("prune", request=4, committed=False, reason="below_min_reclaim", net=None)
    book.declined.update(["below_min_reclaim", "cache_cost", "below_min_reclaim"])
    book.committed(650, exact=True)
    data = read.report_data(read.sessions(project / ".baton")[0])
    summary = data["summary"]
    assert {key: summary[key] for key in CACHE_KEYS} == {
        "prompt_tokens": 5_600, "cache_read_tokens": 2_200, "cache_write_tokens": 600,
        "uncached_prompt_tokens": 3_400, "responses": 4, "responses_reporting_cache": 3, "reclaimed_tokens": 650,
        "reclaimed_exact": True, "prunes_committed": 1,
        "prunes_declined": {"below_min_reclaim": 2, "cache_cost": 1}}
    status = book.summary()
    assert all(summary[key] == status[key] for key in CACHE_KEYS)  # one definition: the status's account
    assert [(p["committed"], p["reason"], p["reclaimed"]) for p in data["prunes"]] == [
        (False, "below_min_reclaim", None), (True, "pays", 650), (False, "cache_cost", None),
        (False, "below_min_reclaim", None)]
    assert data["prunes"][1]["request"] == 3 and data["prunes"][1]["first_changed"] == 4
    assert data["skipped"] == {"unknown_events": 0, "unknown_fields": {}, "wrong_type_fields": {}}
    # an estimated reclaimed figure (or a committed prune that lost its figure) makes the total not exact
    log.emit("prune", request=4, committed=True, reason="pays", before=1_300, after=1_000, reclaimed=300,
             exact=False)
    again = read.report_data(read.sessions(project / ".baton")[0])["summary"]
    assert (again["reclaimed_tokens"], again["reclaimed_exact"], again["prunes_committed"]) == (950, False, 2)
    human = run_baton("report", cwd=project)
    assert human.code == 0, human.stderr
    assert ("prompt tokens sent 5,600, 2,200 read from the cache, 3,400 uncached; 950 tokens reclaimed by 2 prunes, "
            "not every figure exact, 3 declined (below_min_reclaim 2, cache_cost 1)") in human.stdout


def test_a_log_from_a_baton_before_reclamation_reads_with_the_cache_figures_absent(project: Path) -> None:
    """A usage without cache fields and no prune event (a Baton before issue 44, or a route that does not report
    its cache): the cache's and the reclaimed figures are None (said, not guessed as 0), nothing skipped."""
    log = started(project, baton_version="0.9.0")
    request(log, 100)
    log.emit("usage", request=1, reported=110, route_check={"verdict": "confirmed", "ratio": 1.0})
    answer = report(project)
    summary = answer["summary"]
    assert {key: summary[key] for key in CACHE_KEYS} == {
        "prompt_tokens": 110, "cache_read_tokens": None, "cache_write_tokens": None, "uncached_prompt_tokens": None,
        "responses": 1, "responses_reporting_cache": 0, "reclaimed_tokens": None, "reclaimed_exact": None,
        "prunes_committed": 0, "prunes_declined": {}}
    assert answer["prunes"] == [] and answer["skipped"]["unknown_events"] == 0
    page = Path(answer["html"]).read_text(encoding="utf-8")
    assert "not reported by the route" in page and "no prune logged" in page
    human = run_baton("report", cwd=project)
    assert human.code == 0, human.stderr
    assert "prompt tokens sent 110, cache not reported by the route; no prune logged" in human.stdout
    printed = run_baton("report", "--json", cwd=project)
    assert printed.code == 0 and printed.data["summary"]["uncached_prompt_tokens"] is None


def test_prune_and_cache_fields_of_the_wrong_type_are_read_as_absent(project: Path) -> None:
    log = started(project)
    request(log, 100)
    log.emit("usage", request=1, reported=100, cache_read="all of it", uncached=-1.5)
    log.emit("prune", request=1, committed=True, reason="pays", reclaimed="lots", exact=True)
    log.emit("prune", request=1, committed="maybe", reason="pays", reclaimed=500, exact=True)
    log.emit("prune", request=1, committed=False, reason=7)
    answer = report(project)
    summary = answer["summary"]
    assert (summary["prompt_tokens"], summary["cache_read_tokens"], summary["uncached_prompt_tokens"]) == \
        (100, None, None)
    # a committed prune without its figure counts, and its figure is no exact count; an unreadable flag counts as
    # neither committed nor declined
    assert (summary["prunes_committed"], summary["reclaimed_tokens"], summary["reclaimed_exact"]) == (1, 0, False)
    assert summary["prunes_declined"] == {"unknown": 1}
    assert answer["skipped"]["wrong_type_fields"] == {"prune.committed": 1, "prune.reason": 1, "prune.reclaimed": 1,
                                                      "usage.cache_read": 1, "usage.uncached": 1}


def test_report_picks_sessions_by_name_prefix_raw_id_and_owner(project: Path) -> None:
    request(started(project, "local-session"), 1)
    gateway = {"platform": "telegram", "conversation_id": "sha256:aaaa"}
    request(started(project, "gateway-session", owner=gateway), 2)
    latest = report(project)
    assert latest["requests"][0]["prompt"] == 2  # default: the latest session
    assert report(project, "local-session")["requests"][0]["prompt"] == 1  # a Hermes session id
    key = metrics_log.session_key("local-session")
    assert report(project, key[:6])["session"] == key
    mine = report(project, scope=Scope(platform="cli", conversation_id=None))
    assert mine["session"] == key  # the latest session of that owner
    with pytest.raises(NotFoundError, match="no single session log matches 'nope'"):
        report(project, "nope")


def test_report_without_any_session_says_where_it_looked(project: Path) -> None:
    with pytest.raises(NotFoundError, match=r"no session log in .*metrics.*a session writes one as it runs"):
        report(project)


def test_a_filter_that_hides_every_log_says_which_logs_exist_and_how_to_name_one(project: Path) -> None:
    """Issue 31: ``--platform telegram --session-key KEY`` beside CLI logs said "none yet"; it names them."""
    request(started(project, "cli-session"), 1)
    key = metrics_log.session_key("cli-session")
    answer = run_baton("report", "--platform", "telegram", "--session-key", "agent:main:telegram:dm:42", "--json",
                       cwd=project)
    message = answer.data["error"]["message"]
    assert answer.code != 0 and "none yet" not in message
    assert "no session log for platform 'telegram' and this session key" in message
    assert "1 other session log(s) exist (cli 1)" in message and key in message
    assert "agent:main:telegram:dm:42" not in message  # a session key is never echoed
    named = run_baton("report", key, "--json", cwd=project)  # the advice works
    assert named.code == 0 and named.data["session"] == key
    by_platform = run_baton("report", "--platform", "cli", "--json", cwd=project)
    assert by_platform.code == 0 and by_platform.data["session"] == key


def test_cli_writes_the_page_and_prints_the_same_data(project: Path, tmp_path: Path) -> None:
    request(started(project), 100)
    page = tmp_path / "page.html"
    answer = run_baton("report", "--html", str(page), "--json", cwd=project)
    assert answer.code == 0, answer.stderr
    assert answer.data["html"] == str(page) and len(answer.data["requests"]) == 1
    assert "<svg" in page.read_text(encoding="utf-8")
    human = run_baton("report", cwd=project)
    assert human.code == 0 and "1 requests, 0 compactions" in human.stdout
    assert "report: " in human.stdout and human.stdout.strip().endswith(".html")
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    missing = run_baton("report", "--json", cwd=nowhere)
    assert missing.code == 4 and "baton init" in missing.data["error"]["message"]


def test_doctor_reads_the_latest_route_verdict(project: Path) -> None:
    assert read.latest_route_check(project / ".baton") is None
    first = started(project, "one")
    request(first, 10)
    first.emit("usage", request=1, reported=20, route_check={"verdict": "calibrated", "ratio": 2.0})
    request(started(project, "two"), 10)  # a later session with no response yet
    verdict = read.latest_route_check(project / ".baton")
    assert verdict == {"session": metrics_log.session_key("one"), "request": 1, "verdict": "calibrated",
                       "ratio": 2.0}


def test_doctor_reads_the_route_verdict_of_the_latest_session(project: Path) -> None:
    """``baton doctor``'s route row: nothing before a response, then the provider's word on Baton's counts, as
    the engine logged ``RouteCheck.status`` after each response; a calibrated route names the fix."""
    from baton_engine.tokens.contract import TokenCount
    from baton_engine.tokens.verify import RouteCheck

    def route_row() -> dict[str, str]:
        return next(c for c in doctor(project)["checks"] if c["name"] == "route")

    assert route_row()["status"] == "skipped"
    right = RouteCheck()
    right.observe(TokenCount(1000, True, "hf:qwen3"), 1000)
    log = started(project)
    request(log, 1000)
    log.emit("usage", request=1, reported=1000, route_check=right.status("hf:qwen3"))
    row = route_row()
    assert row["status"] == "pass" and row["detail"].startswith("confirmed") and "1000 vs reported 1000" in row["detail"]
    wrong = RouteCheck()
    wrong.observe(TokenCount(1000, True, "tiktoken:o200k_base"), 1180)
    later = started(project, session_id="session-2")
    request(later, 1000)
    later.emit("usage", request=1, reported=1180, route_check=wrong.status("tiktoken:o200k_base"))
    row = route_row()
    assert row["status"] == "warn" and "tiktoken:o200k_base undercounts this server by 18%" in row["detail"]
    assert "set baton.tokenizer" in row["detail"]


def test_an_event_with_a_key_json_cannot_write_is_dropped(project: Path) -> None:
    """json.dumps raises TypeError for a non-string key (``default=str`` covers values only): dropped, not raised."""
    log = started(project)
    request(log, 1)
    log.emit("usage", route_check={("not", "a", "string"): 1})
    assert log.dropped == 1 and len(Path(log.path).read_text().splitlines()) == 2


def test_a_project_dir_in_a_symlink_loop_starts_a_log_that_drops_everything(tmp_path: Path) -> None:
    """Path.resolve raises RuntimeError for a symlink loop on Python 3.11: no log, the agent goes on."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    log = MetricsLog.start(loop, session_id="s", header=HEADER, retention=RETENTION)
    assert log.path is None


def test_report_reads_a_log_with_wrong_types_unknown_events_and_a_torn_line_and_says_what_it_skipped(
        project: Path) -> None:
    """Another version's log, a crash mid-write: what does not fit is skipped by field NAME (never its value)."""
    log = started(project, window="sixty-four thousand")  # a header field of the wrong type
    request(log, 100)
    log.emit("request", prompt=200, mode="exact", source=["VALUE-NOT-SHOWN"], window="1000", cap_sent={"x": 1},
             short="yes")  # at 9dba563 the window's string raised TypeError in the summary
    log.emit("usage", request="one", reported=True, route_check={"verdict": "confirmed", "ratio": "1.1"})
    log.emit("telemetry_v9", secret_looking="VALUE-NOT-SHOWN")  # an event of a later version
    request(log, 300, future_field=7)
    with open(log.path, "ab") as handle:
        handle.write(b'{"ev":"request","n":4,"prompt":4')  # torn by a crash
    answer = report(project)
    assert answer["ok"] and [r["prompt"] for r in answer["requests"]] == [100, 200, 300]
    assert answer["requests"][1]["window"] is None and answer["requests"][1]["cap_sent"] is None
    assert answer["header"]["window"] is None and answer["summary"]["peak_prompt"] == 300
    assert answer["unreadable_lines"] == 1
    assert answer["skipped"] == {
        "unknown_events": 1, "unknown_fields": {"request.future_field": 1},
        "wrong_type_fields": {"request.cap_sent": 1, "request.short": 1, "request.source": 1, "request.window": 1,
                              "session.window": 1, "usage.reported": 1, "usage.request": 1,
                              "usage.route_check.ratio": 1}}
    page = Path(answer["html"]).read_text(encoding="utf-8")
    assert "request.window (1)" in page and "1 events of an unknown kind skipped" in page
    printed = run_baton("report", "--json", cwd=project)
    assert printed.code == 0 and printed.data["skipped"] == answer["skipped"]
    assert "VALUE-NOT-SHOWN" not in printed.stdout.replace(str(log.path), "") and "VALUE-NOT-SHOWN" not in page


def test_the_retention_settings_come_from_config_yaml_and_a_bad_one_is_named() -> None:
    from baton_engine.settings import SettingsError, load_settings

    settings = load_settings(env={}, hermes_block={"metrics_max_age_days": 7, "metrics_max_total_mb": 16,
                                                   "metrics_live_hours": 48})
    assert (settings.metrics_max_age_days, settings.metrics_max_total_mb, settings.metrics_live_hours) == (7, 16, 48)
    with pytest.raises(SettingsError, match="baton.metrics_live_hours"):
        load_settings(env={}, hermes_block={"metrics_live_hours": 0})
