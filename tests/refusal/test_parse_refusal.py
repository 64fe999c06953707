"""``parse_refusal`` on each server's real refusal text, and on errors that are not context overflows.

Where each text comes from (server version + source file, or the place it was measured):
- vLLM 0.32, both forms: measured against a vLLM 0.32 CPU server (8,192 window), recorded in the project's
  ``docs/tokenizers-and-vllm.md`` ("What vLLM 0.32 refuses").
- vLLM 0.20 "for a total of at least": vllm-project/vllm#42474 (quoted in the same doc); vLLM 0.25 forms:
  ``vllm/renderers/params.py`` (prompt in tokens / in characters, ``_token_len_check`` / ``_text_len_check``
  "You passed ... However, the model's context length is only ...", and the ``{max_total_tokens=}`` f-string
  that prints "max_model_len=max_total_tokens=N").
- vLLM 0.6-0.10: ``vllm/entrypoints/openai/serving_engine.py`` ``_validate_input`` ("'max_tokens' or
  'max_completion_tokens' is too large"; older: "you requested N tokens (P in the messages, C in the
  completion)"); vLLM v1 ``vllm/v1/engine/processor.py`` ("The decoder prompt (length N) ...").
- SGLang: ``sgl-project/sglang`` ``python/sglang/srt/managers/tokenizer_manager.py`` (``_validate_token_len``).
- llama.cpp: ``ggml-org/llama.cpp`` ``tools/server/server-context.cpp`` (``send_error(... "request (%d tokens)
  exceeds the available context size (%d tokens), try increasing it", ERROR_TYPE_EXCEED_CONTEXT_SIZE)``),
  ``tools/server/server-task.cpp`` ``server_task_result_error::to_json`` (adds ``n_prompt_tokens`` / ``n_ctx``)
  and ``utils.hpp`` ``format_error_response`` (type ``exceed_context_size_error``); older builds said "the
  request exceeds the available context size, try increasing it" and "input (%d tokens) is larger than the
  max context size (%d tokens). skipping".
- OpenAI: the API's ``context_length_exceeded`` messages (Chat Completions and Responses).
- Anthropic: the Messages API's ``invalid_request_error`` messages; the "max_tokens: X > context_window: ..."
  form as Hermes 0.19.0 quotes it (``agent/model_metadata.py`` ``parse_available_output_tokens_from_error``).
- Ollama: ``llm/server.go`` ("input length exceeds the context length").
- Gemini: the API's ``INVALID_ARGUMENT`` error, native as google-genai raises it (googleapis/python-genai#2466)
  and through the OpenAI-compatible endpoint, whose body is the same error object in a list (the openai SDK's
  ``Error code: 400 - [{'error': ...}]``, SuzumiyaAkizuki/ComfyUI-NewBie-LLM-Formatter#3; the overflow text:
  google-gemini/gemini-cli#12214).
- Mistral: La Plateforme's 400 ("Prompt contains N tokens and 0 draft tokens, too large for model with W maximum
  context length"; docs.mistral.ai known limitations, quoted by Bedrock users: "The model returned the following
  errors: Prompt contains ..."); the older form without the draft tokens.
- Bedrock: ``ValidationException`` "Input is too long for requested model." (InvokeModel / Converse;
  aws-samples/assessment-generator#2, continuedev/continue#9592): no numbers.
- OpenAI Responses API: ``context_length_exceeded`` "Your input exceeds the context window of this model. Please
  adjust your input and try again." (param ``input``; the streamed ``error`` event, dyad-sh/dyad#1672): no numbers.
"""

from __future__ import annotations

import json

import pytest

from baton_engine.refusal import OUTPUT_TOO_LARGE, PROMPT_PLUS_OUTPUT, PROMPT_TOO_LONG, Refusal, parse_refusal

# (text, kind, window, prompt_tokens, requested_output, server, prompt_exact)
REAL = {
    "vllm-0.32-prompt": (
        "This model's maximum context length is 8192 tokens. However, your prompt contains at least 8193 input "
        "tokens, which exceeds this limit even without any output tokens. (parameter=input_tokens, value=8193)",
        # the doc elides one sentence between these two parts; the parser reads only the first
        PROMPT_TOO_LONG, 8192, 8193, None, "vllm", False),
    "vllm-0.32-max-tokens": (
        "max_tokens=65536 cannot be greater than max_model_len=64000. Please request fewer output tokens. "
        "(parameter=max_tokens, value=65536)",
        OUTPUT_TOO_LARGE, 64000, None, 65536, "vllm", True),
    "vllm-0.20-total-at-least": (
        "This model's maximum context length is 128000 tokens. However, you requested 65535 output tokens and "
        "your prompt contains at least 62466 input tokens, for a total of at least 128001 tokens. Please reduce "
        "the length of the input prompt or the number of requested output tokens. "
        "(parameter=input_tokens, value=62466)",
        PROMPT_PLUS_OUTPUT, 128000, 62466, 65535, "vllm", False),
    "vllm-0.25-total-exact": (
        "This model's maximum context length is 8192 tokens. However, you requested 64 output tokens and your "
        "prompt contains 10000 input tokens, for a total of 10064 tokens. Please reduce the length of the input "
        "prompt or the number of requested output tokens.",
        PROMPT_TOO_LONG, 8192, 10000, 64, "vllm", True),  # 10,000 > 8,192: the prompt alone did not fit
    "vllm-0.25-characters": (
        "This model's maximum context length is 4096 tokens. However, you requested 4096 output tokens and your "
        "prompt contains 110 characters (more than 0 characters, which is the upper bound for 0 input tokens). "
        "Please reduce the length of the input prompt or the number of requested output tokens.",
        PROMPT_PLUS_OUTPUT, 4096, None, 4096, "vllm", True),
    "vllm-renderer-token-len": (
        "You passed 9000 input tokens and requested 1024 output tokens. However, the model's context length is "
        "only 8192 tokens, resulting in a maximum input length of 7168 tokens. Please reduce the length of the "
        "input prompt.",
        PROMPT_TOO_LONG, 8192, 9000, 1024, "vllm", True),
    "vllm-renderer-text-len": (
        "You passed 400000 input characters and requested 1024 output tokens. However, the model's context length "
        "is only 8192 tokens, resulting in a maximum input length of 7168 tokens (at most 286720 characters). "
        "Please reduce the length of the input prompt.",
        PROMPT_PLUS_OUTPUT, 8192, None, 1024, "vllm", True),
    "vllm-renderer-max-total": (
        "max_tokens=8888 cannot be greater than max_model_len=max_total_tokens=3072. Please request fewer output "
        "tokens.",
        OUTPUT_TOO_LARGE, 3072, None, 8888, "vllm", True),
    "vllm-serving-engine-max-tokens": (
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 "
        "tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None",
        PROMPT_PLUS_OUTPUT, 4096, 2778, 8000, "vllm", True),
    "vllm-old-messages-completion": (
        "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (60000 in the "
        "messages, 10000 in the completion). Please reduce the length of the messages or completion.",
        PROMPT_PLUS_OUTPUT, 65536, 60000, 10000, "openai", True),
    "vllm-v1-decoder-prompt": (
        "The decoder prompt (length 40961) is longer than the maximum model length of 40960. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
        PROMPT_TOO_LONG, 40960, 40961, None, "vllm", True),
    "openai-messages": (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 150021 tokens. "
        "Please reduce the length of the messages.",
        PROMPT_TOO_LONG, 128000, 150021, None, "openai", True),
    "openai-responses-input-limit": (
        "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. "
        "Please reduce the length of the messages.",
        PROMPT_TOO_LONG, 272000, 509178, None, "openai", True),
    "openrouter": (
        "This endpoint's maximum context length is 131072 tokens. However, you requested about 132463 tokens "
        "(1463 of text input, 131000 in the output). Please reduce the length of either one, or use the "
        "\"middle-out\" transform to compress your prompt automatically.",
        PROMPT_PLUS_OUTPUT, 131072, 1463, 131000, "openrouter", True),
    "sglang-total": (
        "Requested token count exceeds the model's maximum context length of 262144 tokens. You requested a total "
        "of 263925 tokens: 199925 tokens from the input messages and 64000 tokens for the completion. Please reduce "
        "the number of tokens in the input messages or the completion to fit within the limit.",
        PROMPT_PLUS_OUTPUT, 262144, 199925, 64000, "sglang", True),
    "sglang-total-floats": (
        "Requested token count exceeds the model's maximum context length of 131072 tokens. You requested a total "
        "of 524300.0 tokens: 12 tokens from the input messages and 524288.0 tokens for the completion.",
        PROMPT_PLUS_OUTPUT, 131072, 12, 524288, "sglang", True),
    "sglang-input": (
        "The input (250000 tokens) is longer than the model's context length (200000 tokens).",
        PROMPT_TOO_LONG, 200000, 250000, None, "sglang", True),
    "anthropic-prompt": (
        "prompt is too long: 215000 tokens > 200000 maximum",
        PROMPT_TOO_LONG, 200000, 215000, None, "anthropic", True),
    "anthropic-input-plus-max-tokens": (
        "input length and `max_tokens` exceed context limit: 197202 + 21333 > 200000, decrease input length or "
        "`max_tokens` and try again",
        PROMPT_PLUS_OUTPUT, 200000, 197202, 21333, "anthropic", True),
    "anthropic-available-tokens": (
        "max_tokens: 32768 > context_window: 200000 - input_tokens: 190000 = available_tokens: 10000",
        PROMPT_PLUS_OUTPUT, 200000, 190000, 32768, "anthropic", True),
    "llamacpp-text": (
        "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it",
        PROMPT_TOO_LONG, 4096, 4476, None, "llama.cpp", True),
    "llamacpp-newer-text": (
        "request (8200 tokens) exceeds context size (8192 tokens)",
        PROMPT_TOO_LONG, 8192, 8200, None, "llama.cpp", True),
    "llamacpp-older-text": (
        "input (5000 tokens) is larger than the max context size (4096 tokens). skipping",
        PROMPT_TOO_LONG, 4096, 5000, None, "llama.cpp", True),
    "ollama": (
        "the input length exceeds the context length",
        PROMPT_TOO_LONG, None, None, None, "ollama", True),
    "gemini-native": (
        "400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'The input token count (81881) exceeds the maximum "
        "number of tokens allowed (65536).', 'status': 'INVALID_ARGUMENT'}}",
        PROMPT_TOO_LONG, 65536, 81881, None, "gemini", True),
    "gemini-openai-compatible": (
        "Error code: 400 - [{'error': {'code': 400, 'message': 'The input token count (134123) exceeds the maximum "
        "number of tokens allowed (131072).', 'status': 'INVALID_ARGUMENT'}}]",
        PROMPT_TOO_LONG, 131072, 134123, None, "gemini", True),
    "mistral": (
        "Prompt contains 321774 tokens and 0 draft tokens, too large for model with 262144 maximum context length",
        PROMPT_TOO_LONG, 262144, 321774, None, "mistral", True),
    "mistral-older": (
        "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
        PROMPT_TOO_LONG, 131072, 140000, None, "mistral", True),
    "mistral-on-bedrock": (
        "An error occurred (ValidationException) when calling the Converse operation: The model returned the "
        "following errors: Prompt contains 248198 tokens and 0 draft tokens, too large for model with 131072 "
        "maximum context length",
        PROMPT_TOO_LONG, 131072, 248198, None, "mistral", True),
    "bedrock": (
        "An error occurred (ValidationException) when calling the Converse operation: Input is too long for "
        "requested model.",
        PROMPT_TOO_LONG, None, None, None, "bedrock", True),
    "openai-responses-no-numbers": (
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        PROMPT_TOO_LONG, None, None, None, "openai", True),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_each_real_message_gives_its_numbers(name: str) -> None:
    text, kind, window, prompt, output, server, exact = REAL[name]
    assert parse_refusal(text) == Refusal(kind, window, prompt, output, server, exact)


LLAMACPP_BODY = {  # llama.cpp's JSON error body: the counts are fields beside a message that states none
    "error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
              "type": "exceed_context_size_error", "n_prompt_tokens": 33012, "n_ctx": 32768},
}


def test_llamacpp_body_fields_give_the_numbers_the_message_lacks() -> None:
    assert parse_refusal(LLAMACPP_BODY) == Refusal(PROMPT_TOO_LONG, 32768, 33012, None, "llama.cpp")
    assert parse_refusal(json.dumps(LLAMACPP_BODY)) == Refusal(PROMPT_TOO_LONG, 32768, 33012, None, "llama.cpp")


def test_llamacpp_fields_win_over_numbers_in_its_message() -> None:
    body = {"error": {**LLAMACPP_BODY["error"], "n_ctx": 16384,
                      "message": "request (33012 tokens) exceeds the available context size (32768 tokens), "
                                 "try increasing it"}}
    assert parse_refusal(body).window == 16384  # type: ignore[union-attr]


def test_llamacpp_message_without_numbers_or_fields_still_says_prompt_too_long() -> None:
    assert parse_refusal("the request exceeds the available context size, try increasing it") == Refusal(
        PROMPT_TOO_LONG, None, None, None, "llama.cpp")


class _FakeResponse:
    def __init__(self, text: str) -> None:
        self.text = text


class StatusError(Exception):
    """Shaped like the OpenAI SDK's ``APIStatusError``: str and ``.message`` say "Error code: 400 - {repr}",
    ``.body`` is the decoded ``error`` object, ``.response`` the HTTP response."""

    def __init__(self, body: dict, *, with_body: bool = True) -> None:
        self.message = f"Error code: 400 - {body!r}"
        super().__init__(self.message)
        self.body = body.get("error", body) if with_body else None
        self.response = _FakeResponse(json.dumps(body))


def test_exception_with_body_dict() -> None:
    assert parse_refusal(StatusError(LLAMACPP_BODY)) == Refusal(PROMPT_TOO_LONG, 32768, 33012, None, "llama.cpp")


def test_exception_whose_only_text_is_the_python_repr_of_the_body() -> None:
    error = StatusError(LLAMACPP_BODY, with_body=False)
    error.response = None  # type: ignore[assignment]
    assert parse_refusal(error) == Refusal(PROMPT_TOO_LONG, 32768, 33012, None, "llama.cpp")


def test_exception_with_only_the_response_text() -> None:
    body = {"error": {"message": REAL["sglang-total"][0], "type": "BadRequestError", "code": 400}}
    error = Exception("Bad Request")
    error.response = _FakeResponse(json.dumps(body))  # type: ignore[attr-defined]
    assert parse_refusal(error) == Refusal(PROMPT_PLUS_OUTPUT, 262144, 199925, 64000, "sglang")


def test_a_property_that_raises_is_no_text() -> None:
    class Odd(Exception):
        @property
        def body(self) -> None:
            raise RuntimeError("broken")

    assert parse_refusal(Odd("prompt is too long: 215000 tokens > 200000 maximum")).window == 200000  # type: ignore[union-attr]


def test_openrouter_wraps_the_provider_error_in_metadata_raw() -> None:
    inner = {"error": {"message": REAL["vllm-0.20-total-at-least"][0], "code": 400}}
    body = {"error": {"message": "Provider returned error", "code": 400, "metadata": {"raw": json.dumps(inner)}}}
    assert parse_refusal(body) == Refusal(PROMPT_PLUS_OUTPUT, 128000, 62466, 65535, "vllm", prompt_exact=False)


def test_counts_with_thousands_separators() -> None:
    refusal = parse_refusal("prompt is too long: 215,000 tokens > 200,000 maximum")
    assert refusal is not None and (refusal.window, refusal.prompt_tokens) == (200000, 215000)


def test_a_server_that_only_states_its_window() -> None:
    refusal = parse_refusal("This model's maximum context length is 16384 tokens, however you requested 16448 tokens.")
    assert refusal == Refusal(PROMPT_PLUS_OUTPUT, 16384, None, None, "generic")


NOT_OVERFLOWS = {
    "rate-limit": "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, "
                  "Used 29000, Requested 2000. Please try again in 2s.",
    "anthropic-rate-limit": "This request would exceed the rate limit for your organization of 40,000 input "
                            "tokens per minute.",
    "auth": "Error code: 401 - {'error': {'message': 'Incorrect API key provided', 'type': 'invalid_request_error'}}",
    "tool-pairing": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                    "'tool_calls'.",
    "anthropic-tool-pairing": "messages.3: `tool_use` ids were found without `tool_result` blocks immediately "
                              "after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block "
                              "in the next message.",
    "openai-output-cap": "max_tokens is too large: 65536. This model supports at most 16384 completion tokens, "
                         "whereas you provided 65536.",
    "anthropic-output-cap": "max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for "
                            "claude-sonnet-4-20250514",
    "unsupported-parameter": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                             "'max_completion_tokens' instead.",
    "server-error-with-numbers": "Internal server error: worker 3 of 8 failed after 4096 ms",
    "gemini-invalid-argument": "Error code: 400 - [{'error': {'code': 400, 'message': 'Request contains an invalid "
                               "argument.', 'status': 'INVALID_ARGUMENT'}}]",
    "bedrock-body-bytes": "An error occurred (ValidationException) when calling the InvokeModel operation: 1 "
                          "validation error detected: Value at 'body' failed to satisfy constraint: Member must have "
                          "length less than or equal to 25000000",
}


@pytest.mark.parametrize("name", sorted(NOT_OVERFLOWS))
def test_errors_that_are_not_context_overflows(name: str) -> None:
    assert parse_refusal(NOT_OVERFLOWS[name]) is None


@pytest.mark.parametrize("error", [None, "", 42, b"", [], {}, {"error": None}, Exception()])
def test_nothing_readable_is_none(error: object) -> None:
    assert parse_refusal(error) is None


def test_a_refusal_holds_numbers_and_names_only() -> None:
    for text, *_ in REAL.values():
        refusal = parse_refusal(text + " SECRET-PROMPT-TEXT")
        assert refusal is not None
        assert "SECRET" not in repr(refusal)
        assert all(v is None or isinstance(v, (int, bool)) for v in
                   (refusal.window, refusal.prompt_tokens, refusal.requested_output, refusal.prompt_exact))


def test_gemini_through_the_openai_sdk_whose_body_is_a_list() -> None:
    """The OpenAI-compatible endpoint answers with Google's error object inside a list: the SDK's ``.body`` is that
    list and its message the list's repr; the response text is the JSON list."""
    body = [{"error": {"code": 400, "message": "The input token count (70312) exceeds the maximum number of tokens "
                                               "allowed (65536).", "status": "INVALID_ARGUMENT"}}]
    error = Exception(f"Error code: 400 - {body!r}")
    error.body = body  # type: ignore[attr-defined]
    error.response = _FakeResponse(json.dumps(body))  # type: ignore[attr-defined]
    assert parse_refusal(error) == Refusal(PROMPT_TOO_LONG, 65536, 70312, None, "gemini")
    assert parse_refusal(json.dumps(body)) == Refusal(PROMPT_TOO_LONG, 65536, 70312, None, "gemini")
