"""What Baton adds to every request: its tool schemas, counted with the real Qwen3 tokenizer and chat template
(issue 31 item 4: 1,914 tokens before, a budget of 600 for the four)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from batontest.assets import hf_backend, qwen3_dir

from baton_engine.agent.tools import TOOL_NAMES, schema_tokens
from baton_engine.settings import SettingsError, load_settings

BUDGET_TOKENS = 600  # docs/hermes.md, "What Baton adds to every request"
REPO = Path(__file__).resolve().parents[2]
# where the docs state the four schemas' cost: each must be this test's count, never a typed figure
STATED = {"README.md": r"all four: ([\d,]+) tokens", "docs/hermes.md": r"\*\*([\d,]+) tokens\*\* for the four",
          "docs/benchmarks.md": r"Qwen3 tokenizer and chat template by\s+`tests/counting/test_tool_schema_budget.py`: "
                                r"\*\*([\d,]+) tokens\*\*"}


def test_the_four_schemas_cost_at_most_the_budget_and_fewer_tools_cost_less() -> None:
    backend = hf_backend(qwen3_dir())
    all_four = schema_tokens(backend.count_chat)
    assert all_four is not None and 0 < all_four <= BUDGET_TOKENS, all_four
    two = schema_tokens(backend.count_chat, ("baton_capture", "baton_recall"))
    assert two is not None and 0 < two < all_four
    assert schema_tokens(backend.count_chat, ()) == 0


def test_the_tools_setting_offers_a_subset_and_names_a_wrong_one() -> None:
    assert load_settings(env={}).tools == TOOL_NAMES
    chosen = load_settings(env={}, hermes_block={"tools": ["recall", "baton_capture"]})
    assert chosen.tools == ("baton_capture", "baton_recall")
    assert load_settings(env={}, hermes_block={"tools": []}).tools == ()
    with pytest.raises(SettingsError, match=r"baton.tools in config.yaml: recal is not one of Baton's tools "
                                            r"\(capture, resume, status, recall\)"):
        load_settings(env={}, hermes_block={"tools": ["recal"]})


def test_the_docs_state_the_measured_cost() -> None:
    all_four = schema_tokens(hf_backend(qwen3_dir()).count_chat)
    for doc, pattern in STATED.items():
        found = re.search(pattern, (REPO / doc).read_text(encoding="utf-8"))
        assert found is not None, f"{doc} no longer states the schemas' cost ({pattern})"
        assert int(found.group(1).replace(",", "")) == all_four, (doc, found.group(1), all_four)
