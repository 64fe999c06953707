"""``/model`` to other servers in the REAL Hermes loop: each new route's requests fit ITS window (issue 30).

The real ``AIAgent`` reads design files from a first server (the configured model, a 65,536 window, Baton's
configured Qwen3 tokenizer). Then ``AIAgent.switch_model`` moves it, as Hermes' ``/model`` handlers do, to a second
server that serves another model with a 32,768 window and cannot count (an OpenAI-compatible chat server), and
later to a third one with the same window that counts for itself (vLLM-like: /tokenize and ``owned_by: "vllm"``).
It reads more files on each. The history it brings (~19k tokens) plus the new files overflow 32,768, and
config.yaml's ``max_tokens`` still asks for 65,536. Baton's configured tokenizer is not these models', so the second
route counts with the rough count and its measured margin, and the third through the server's own /tokenize
(exact, with no unconfirmed room: it is the provider's count). Each server judges every request with its own
count of the prompt and refuses one whose prompt plus cap is above its window. At 9dba563 the rough count kept no
margin and such requests left over the window. Before Baton skipped Hermes' check of a summariser's window
(``patches``), 0.19 ended the conversation at the first compaction on a 32,768 window.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.assets import qwen3_dir
from batontest.model_server import ModelServer, RecordedRequest, Reply, ScriptedPolicy, ToolCall
from batontest.reading import files_never_seen, request_map, run_reading

pytestmark = pytest.mark.hermes

FIRST_WINDOW, SMALL_WINDOW = 65_536, 32_768
FILE_WORDS = 3_200  # ~6.1k Qwen3 tokens a file
READS = ((1, 2, 3), (4, 5, 6), (7, 8))  # per server: ~19k tokens before the first switch
FILES = 8
TURNS = ("Read design files 1 to 3 under docs/ one by one.", "Now read design files 4 to 6 one by one.",
         "Now read design files 7 and 8.")


def reads(project: Path, numbers: tuple[int, ...]) -> ScriptedPolicy:
    steps = [Reply(content=f"Reading design file {n}.",
                   tool_calls=(ToolCall("read_file", {"path": str(project / f"docs/design_{n:02d}.md")}),))
             for n in numbers]
    return ScriptedPolicy(steps, final_answer=f"Files {numbers[0]}-{numbers[-1]} read.")


def fits(requests: list[RecordedRequest], window: int) -> bool:
    return all(r.prompt_tokens is not None and r.prompt_tokens + r.output_budget <= window for r in requests)


def test_after_each_model_switch_every_request_fits_the_new_window(tmp_path: Path) -> None:
    project = tmp_path / "project"
    with ModelServer(reads(project, READS[0]), context_window=FIRST_WINDOW) as first, \
            ModelServer(reads(project, READS[1]), context_window=SMALL_WINDOW, model_name="chat-only-model",
                        call_id_tag="b") as estimated, \
            ModelServer(reads(project, READS[2]), context_window=SMALL_WINDOW, model_name="counting-model",
                        counts_for_itself=True, call_id_tag="c") as counting:
        result, _home, _wall = run_reading(
            tmp_path, first, files=FILES, file_words=FILE_WORDS, context_length=FIRST_WINDOW,
            max_tokens=FIRST_WINDOW, baton={"tokenizer": {"backend": "hf", "path": str(qwen3_dir())},
                                            "auto_checkpoint_on_end": False}, turns=TURNS,
            hermes={"agent": {"minimum_tool_context_length": SMALL_WINDOW}},  # 0.22 refuses less than 64,000
            switches=[{"before_turn": 1, "model": "chat-only-model", "base_url": estimated.base_url,
                       "provider": "custom"},
                      {"before_turn": 2, "model": "counting-model", "base_url": counting.base_url,
                       "provider": "custom"}])
    servers = (first, estimated, counting)
    statuses = [turn["status"] for turn in result["turns"]]
    figures = "\n".join(f"server {n}:\n{request_map(s.requests, FILES)}" for n, s in enumerate(servers)) + "".join(
        f"\nafter turn {n}: tokenizer={s['tokenizer']} window={s['window']}" for n, s in enumerate(statuses))
    print(figures)
    assert result["engine_class"].startswith("baton_engine"), figures
    assert [t["final_response"] for t in result["turns"]] == ["Files 1-3 read.", "Files 4-6 read.",
                                                              "Files 7-8 read."], figures
    assert all(len(s.main_requests) > len(numbers) for s, numbers in zip(servers, READS)), figures
    # each server's own judgement: nothing refused, every prompt + cap within its window
    assert [r for s in servers for r in s.rejections] == [], figures
    assert fits(first.main_requests, FIRST_WINDOW) and fits(estimated.main_requests, SMALL_WINDOW) and \
        fits(counting.main_requests, SMALL_WINDOW), figures
    assert files_never_seen([r for s in servers for r in s.main_requests], FILES) == [], figures
    # the history brought to each small window had to be compacted there
    assert max(r.prompt_tokens for r in first.main_requests) > SMALL_WINDOW // 2, figures
    assert [s["window"]["effective"] for s in statuses] == [FIRST_WINDOW, SMALL_WINDOW, SMALL_WINDOW], figures
    assert statuses[0]["tokenizer"]["counting"] == "exact" and statuses[0]["tokenizer"]["source"] == "hf:qwen3"
    # the chat-only server cannot count: estimates with their margin (anchored on its usage once it reported)
    assert "not the configured model" in statuses[1]["tokenizer"]["chosen_by"], figures
    assert statuses[1]["tokenizer"]["counting"] != "exact" and estimated.tokenize_requests == 0, figures
    # the counting server was asked: exact counts from its /tokenize, its window from its max_model_len
    assert "its server counts for itself (vllm)" in statuses[2]["tokenizer"]["chosen_by"], figures
    assert statuses[2]["tokenizer"]["counting"] == "exact" and counting.tokenize_requests > 0, figures
    assert statuses[2]["window"]["source"] == "server max_model_len", figures
