#!/usr/bin/env bash
# Demo on a fresh machine: creates .venv-demo with the core and every first-party backend, then counts a
# sample tool-using conversation with each installed backend (all offline).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-demo
# one pip call, so the backends' baton-engine requirement and the [all] extra resolve to this checkout
.venv-demo/bin/python -m pip install -q --disable-pip-version-check \
    -e ".[all]" -e backends/tiktoken -e backends/hf -e backends/vllm
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv-demo/bin/python demo/count_backends.py "$@"
