#!/usr/bin/env bash
# Demo on a fresh machine: creates .venv-demo with the core, every first-party backend and hermes-agent 0.19.0,
# then runs the REAL Hermes agent loop with Baton as its context engine against a bundled local model stand-in
# (exact Qwen3 counts, several compactions, each a handoff file, then the resume brief). Offline after install.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-demo
# one pip call, so the backends' baton-engine requirement and the [all] extra resolve to this checkout
.venv-demo/bin/python -m pip install -q --disable-pip-version-check \
    -e ".[all]" -e backends/tiktoken -e backends/hf -e backends/vllm -e backends/llamacpp "hermes-agent==0.19.0"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
exec .venv-demo/bin/python demo/hermes_demo.py "$@"
