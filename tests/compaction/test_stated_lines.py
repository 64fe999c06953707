"""Settings, decisions and constraints stated in TOOL RESULTS (not only the user's words) reach the brief (issue 32
item 3): a commented setting whose comment gives a reason, or a labelled decision line, kept verbatim."""

from __future__ import annotations

from batontest.transcripts import SECRET, call, numbered, result

from baton_engine.compaction import continuity
from baton_engine.compaction.anchors import StatedLine, extract_anchors, stated_lines
from baton_engine.handoff.redact import contains_secret
from baton_engine.handoff.render import _continuity_lines

ENV_FILE = ["# staging", "LOG_LEVEL=info", "DB_PORT=6543  # pgbouncer, agreed with ops", "DB_NAME=shop",
            "POOL_SIZE=20  # the default"]
DEPLOY_OUTPUT = "rolling out shop-api\ndecided: keep the nightly snapshot at 03:17 UTC\n3/3 pods ready"


def ops_session() -> list[dict]:
    return [
        {"role": "user", "content": "Check the staging config and deploy."},
        {"role": "assistant", "content": None, "tool_calls": [call("r1", "read_file", path="deploy/.env.staging")]},
        result("r1", content=numbered(1, ENV_FILE), total_lines=len(ENV_FILE), truncated=False),
        {"role": "assistant", "content": None, "tool_calls": [call("t1", "terminal", command="make deploy ENV=staging")]},
        result("t1", output=DEPLOY_OUTPUT, exit_code=0, error=None),
        {"role": "assistant", "content": None, "tool_calls": [call("s1", "search_files", pattern="RATE_LIMIT")]},
        result("s1", total_count=1, matches=[{"path": "src/api/limits.py", "line": 14,
                                              "content": "RATE_LIMIT_PER_MINUTE = 120  # per API key, agreed with partners"}]),
        {"role": "assistant", "content": "Deployed."},
    ]


def test_settings_with_their_reason_and_decided_lines_of_tool_results_are_kept_verbatim() -> None:
    anchors = extract_anchors(ops_session())
    assert anchors.stated == (
        StatedLine("DB_PORT=6543  # pgbouncer, agreed with ops", "deploy/.env.staging"),
        StatedLine("decided: keep the nightly snapshot at 03:17 UTC", "make deploy ENV=staging"),
        StatedLine("RATE_LIMIT_PER_MINUTE = 120  # per API key, agreed with partners", "a search for RATE_LIMIT"),
    )
    assert anchors.to_state()["stated"][0] == {"text": "DB_PORT=6543  # pgbouncer, agreed with ops",
                                               "source": "deploy/.env.staging"}


def test_comments_that_only_describe_and_unlabelled_prose_are_not_stated() -> None:
    code = "\n".join([
        "        self._passage_of: list[int] = []  # row -> passage number",
        "    peak_prompt: int  # the largest prompt the server counted",
        "POOL_SIZE=20  # the default",
        "# we decided nothing here",  # a comment line without a setting or a label
        "    decision: str = Field(min_length=1)",  # a field named decision, not a decision
        "The team agreed to meet on Monday.",  # prose: no label
        "x = 1  # " + "must " * 200,  # longer than any config line: data, not scanned
    ])
    assert stated_lines(code) == ()
    assert stated_lines("no hint at all\n" * 1000) == ()


def test_a_stated_line_is_redacted() -> None:
    (line,) = stated_lines(f"API_KEY={SECRET}  # agreed with ops, rotate monthly")
    assert SECRET not in line and not contains_secret(line) and line.endswith("rotate monthly")


def test_the_brief_keeps_them_within_its_exact_budget_and_drops_them_after_the_anchors(qwen_count) -> None:
    region = ops_session()
    kept = continuity.collect(region, continuity.Recall(None, lambda: ()), 1_200, qwen_count)
    stated = [line for line in kept.lines if line.startswith("Stated in")]
    assert stated == ["Stated in deploy/.env.staging: DB_PORT=6543  # pgbouncer, agreed with ops",
                      "Stated in make deploy ENV=staging: decided: keep the nightly snapshot at 03:17 UTC",
                      "Stated in a search for RATE_LIMIT: RATE_LIMIT_PER_MINUTE = 120  # per API key, agreed with "
                      "partners"]
    assert kept.tokens == qwen_count(kept.text) <= 1_200
    assert continuity.ANCHORS_HEADER in kept.lines  # the files and commands still have their share
    # tight: the anchors go first, the stated lines stay, then they go from the last shown
    without_anchors = "\n".join(kept.lines[:kept.lines.index(continuity.ANCHORS_HEADER)])
    text, tokens = kept.fitted(qwen_count(without_anchors), qwen_count)
    assert text == without_anchors and tokens <= qwen_count(without_anchors)
    text, _ = kept.fitted(qwen_count(without_anchors) - 1, qwen_count)
    assert stated[-1] not in text and stated[-2] in text
    # a share of their own, newest first
    anchors = extract_anchors(region)
    assert anchors.render_stated(qwen_count("\n".join(stated[1:])), qwen_count) == stated[1:]
    assert anchors.render_stated(1, qwen_count) == []
    assert not any(line.startswith("Stated in") for line in anchors.render(10_000, qwen_count))


def test_baton_resume_shows_the_stored_stated_lines() -> None:
    state = {"anchors": extract_anchors(ops_session()).to_state()}
    # (inline: whitespace runs collapsed, as every line of ``baton resume``)
    assert "Stated in deploy/.env.staging: DB_PORT=6543 # pgbouncer, agreed with ops" in _continuity_lines(state)
