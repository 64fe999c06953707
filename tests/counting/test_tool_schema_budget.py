"""What Baton adds to every request: its tool schemas, counted with the real Qwen3 tokenizer and chat template
(issue 31 item 4: 1,914 tokens before, a budget of 600 for the four)."""

from __future__ import annotations

import pytest
from batontest.assets import hf_backend, qwen3_dir

from baton_engine.hermes.tools import TOOL_NAMES, schema_tokens
from baton_engine.settings import SettingsError, load_settings

BUDGET_TOKENS = 600  # docs/hermes.md, "What Baton adds to every request"


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
