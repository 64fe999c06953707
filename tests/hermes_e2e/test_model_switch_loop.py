"""``/model`` to another server in the REAL Hermes loop: the new route's requests fit ITS window (issue 30).

The real ``AIAgent`` reads design files from a first server (the configured model, a 65,536 window, Baton's
configured Qwen3 tokenizer), then ``AIAgent.switch_model`` moves it — as Hermes' ``/model`` handlers do — to a
second server serving another model with a 32,768 window, and it reads more files there: the history it brings
(~19k tokens) plus the new files overflow that window, and config.yaml's ``max_tokens`` still asks for 65,536.
Baton's configured tokenizer is not this model's, so the route counts either through the server itself (it is
vLLM-like: /tokenize and ``owned_by: "vllm"``) or, when the server cannot count, with the rough count and its
measured margin. The second server judges every request with its own count of the prompt and refuses one whose
prompt plus cap is above its window. At 9dba563 the rough count kept no margin and such requests left over it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_run import MODEL
from batontest.model_server import ModelServer, Reply, ScriptedPolicy, ToolCall
from batontest.reading import files_never_seen, request_map, run_reading

pytestmark = pytest.mark.hermes

FIRST_WINDOW, SECOND_WINDOW = 65_536, 32_768
SECOND_MODEL = "other-model"
FILE_WORDS = 3_200  # ~6.1k Qwen3 tokens a file: 3 files before the switch (~19k), 3 after
BEFORE, AFTER = (1, 2, 3), (4, 5, 6)
TURNS = ("Read design files 1 to 3 under docs/ one by one.", "Now read design files 4 to 6 one by one.")


def reads(project: Path, numbers: tuple[int, ...], answer: str) -> ScriptedPolicy:
    steps = [Reply(content=f"Reading design file {n}.",
                   tool_calls=(ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),))
             for n in numbers]
    return ScriptedPolicy(steps, final_answer=answer)


@pytest.mark.parametrize("second_server", ["counts for itself", "cannot count"])
def test_after_a_model_switch_every_request_fits_the_new_window(tmp_path: Path, second_server: str) -> None:
    project = tmp_path / "project"
    counts = second_server == "counts for itself"
    with ModelServer(reads(project, BEFORE, "Files 1-3 read."), context_window=FIRST_WINDOW) as first, \
            ModelServer(reads(project, AFTER, "Files 4-6 read."), context_window=SECOND_WINDOW,
                        model_name=SECOND_MODEL, counts_for_itself=counts, call_id_tag="second") as second:
        result, _home, _wall = run_reading(
            tmp_path, first, files=6, file_words=FILE_WORDS, context_length=FIRST_WINDOW, max_tokens=FIRST_WINDOW,
            baton={"tokenizer": {"backend": "hf", "path": str(qwen3_dir())},
                   "auto_checkpoint_on_end": False},
            turns=TURNS, switch={"before_turn": 1, "model": SECOND_MODEL, "base_url": second.base_url,
                                 "provider": "custom"})
    figures = (f"[{second_server}] first:\n{request_map(first.requests, 6)}\nsecond:\n"
               f"{request_map(second.requests, 6)}\nstatus={result['status'].get('tokenizer')} "
               f"window={result['status'].get('window')} turns={[t['final_response'] for t in result['turns']]}")
    print(figures)
    assert result["engine_class"].startswith("baton_engine"), figures
    assert [t["final_response"] for t in result["turns"]] == ["Files 1-3 read.", "Files 4-6 read."], figures
    assert len(second.main_requests) >= len(AFTER) + 1, figures  # the second turn went to the second server
    # the second server's own judgement: nothing refused, every prompt + cap within its window
    assert second.rejections == [] and first.rejections == [], figures
    assert all(r.prompt_tokens + r.output_budget <= SECOND_WINDOW for r in second.main_requests), figures
    assert files_never_seen([*first.main_requests, *second.main_requests], 6) == [], figures
    assert result["status"]["window"]["effective"] == SECOND_WINDOW, figures
    tokenizer = result["status"]["tokenizer"]
    if counts:  # asked the server: exact counts from its /tokenize
        assert "its server counts for itself (vllm)" in tokenizer["chosen_by"], figures
        assert second.tokenize_requests > 0 and tokenizer["counting"] == "exact", figures
    else:
        assert "not the configured model" in tokenizer["chosen_by"], figures
        assert second.tokenize_requests == 0, figures
    assert MODEL != SECOND_MODEL
