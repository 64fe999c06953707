"""The hf backend's sandbox fast paths change speed only: same renders, same refusals, same counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest
from transformers.utils.chat_template_utils import _compile_jinja_template

from baton_engine.tokens.contract import TokenizerConfig
from batontest import assets

from baton_hf.backend import HfBackend
from baton_hf.sandbox import install_fast_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "counting"))
from conversations import conversation, conversation_of_messages  # noqa: E402

# Calls the sandbox refuses (SecurityError), with and without the fast paths.
REFUSED = [
    "{{ messages[0].update({'role': 'x'}) }}",
    "{{ messages[0].pop('role') }}",
    "{{ messages.append(1) }}",
    "{{ ''.__class__.__mro__ }}",
    "{{ messages[0].__class__.__mro__ }}",
    "{{ namespace.mro() }}",  # a class: not a memoised type, the full check runs
]
# Each template reads something the fast paths touch; the suffix makes each compile to its own environment.
PROBES = [*REFUSED, 
    "{% for m in messages %}{{ loop.index0 }}:{{ m.role }}/{{ m.content }}|{{ m.missing }}|{{ loop.last }};{% endfor %}",
    "{% set ns = namespace(n=0, seen=false) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "{{ messages[0].get('role') }}{{ messages[0].items() | list | length }}{{ messages[0].keys() | list }}",
    "{{ messages[0].content.startswith('hi') }}{{ messages[0].content.split(' ') | length }}",
    "{{ messages[0].update }}",
    "{{ messages[0].pop('role') }}",
    "{{ messages.append }}",
    "{{ messages[0].__class__ }}",
    "{{ ''.__class__.__mro__ }}",
    "{{ 'a{0}b'.format(messages[0].role) }}{{ messages[0].content.format }}",
    "{% set ns = namespace(a=1) %}{{ ns._private }}",
    "{{ loop }}{{ messages[0]['role'] }}{{ messages[0].role.upper() }}",
]
MESSAGES = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}]


def outcome(template: str) -> tuple[str, str]:
    try:
        rendered = _compile_jinja_template(template).render(messages=MESSAGES)
        return "ok", rendered.split(" at 0x")[0]  # a printed bound method's address differs per render
    except Exception as exc:  # noqa: BLE001 - the refusal's type is what we compare
        return "refused", type(exc).__name__


@pytest.mark.parametrize("index", range(len(PROBES)))
def test_fast_paths_keep_every_render_and_every_refusal(index: int) -> None:
    template = PROBES[index] + "{# probe %d #}" % index
    before = outcome(template)
    assert install_fast_paths(template) is True
    assert "is_safe_attribute" in vars(_compile_jinja_template(template).environment)
    assert outcome(template) == before
    assert outcome(template) == before  # and again, now from the cached verdicts


@pytest.mark.parametrize("template", REFUSED)
def test_refusals_are_still_refusals(template: str) -> None:
    template += "{# refusal #}"
    with pytest.raises(jinja2.exceptions.SecurityError):
        _compile_jinja_template(template).render(messages=MESSAGES)
    assert install_fast_paths(template) is True
    for _ in range(2):
        with pytest.raises(jinja2.exceptions.SecurityError):
            _compile_jinja_template(template).render(messages=MESSAGES)


def test_an_uncompilable_template_is_left_alone() -> None:
    assert install_fast_paths("{% for %}") is False


COLD_COUNTS = """
import json, sys
from transformers import AutoTokenizer
from baton_hf.normalize import normalize_request
from baton_hf.template import detect_content_format
path, requests = sys.argv[1], json.load(sys.stdin)
tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
assert "baton_hf.sandbox" not in sys.modules
counts = []
for request in requests:
    normalized = normalize_request(request, content_format=detect_content_format(tokenizer.chat_template))
    ids = tokenizer.apply_chat_template(normalized.messages, tools=normalized.tools, tokenize=True,
                                        return_dict=False, **normalized.chat_template_kwargs)
    counts.append(len(ids))
print(json.dumps(counts))
"""


def cold_counts(tokenizer_dir: Path, requests: list[dict[str, Any]]) -> list[int]:
    """Full apply_chat_template counts in a fresh interpreter that never installs the fast paths."""
    done = subprocess.run([sys.executable, "-c", COLD_COUNTS, str(tokenizer_dir)], input=json.dumps(requests),
                          capture_output=True, text=True, timeout=240, check=True,
                          env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                               "PATH": "/usr/bin:/bin"})
    return json.loads(done.stdout)


def grown_by_one(request: dict[str, Any], text: str) -> dict[str, Any]:
    return {**request, "messages": [*request["messages"], {"role": "user", "content": text}]}


@pytest.mark.parametrize(
    ("tokenizer_dir", "bases"),
    [
        (assets.qwen3_dir, lambda: [conversation_of_messages(200), conversation(12, seed=3),
                                    {**conversation(6, seed=4), "chat_template_kwargs": {"enable_thinking": False}}]),
        (assets.mistral_nemo_dir, lambda: [conversation(40, seed=5, with_tools=False), conversation(3, seed=6,
                                                                                                    with_tools=False)]),
    ],
    ids=["qwen3", "mistral-nemo"],
)
def test_warm_counts_of_grown_conversations_equal_cold_counts_in_a_fresh_process(tokenizer_dir: Any, bases: Any) -> None:
    directory = tokenizer_dir()
    backend = HfBackend.from_config(TokenizerConfig(backend="hf", path=str(directory)))
    grown, warm = [], []
    for base in bases():
        backend.count_chat(base)
        request = grown_by_one(base, "One more question: and the tests?  ")
        before = backend._pieces.encoded_pieces
        warm.append(backend.count_chat(request).tokens)
        assert backend._pieces.encoded_pieces - before <= 4  # only the new tail was encoded
        grown.append(request)
    assert warm == cold_counts(directory, grown)
