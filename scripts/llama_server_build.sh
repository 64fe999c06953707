#!/usr/bin/env bash
# Builds a REAL llama.cpp `llama-server` for the llama-real tests, from the llama.cpp that the llama-cpp-python
# SOURCE distribution on PyPI vendors (vendor/llama.cpp, with tools/server): nothing prebuilt can be downloaded
# here, and PyPI is a registry this machine reaches. Only the `llama-server` target is built (CPU, Release; no
# TLS, no web UI download, no tests or examples; this llama.cpp has no curl: LLAMA_CURL is ignored, its own HTTP
# client is what TLS off leaves without https). Measured: 14.4 CPU-minutes (23.4 min wall on 2 cores under a load
# of ~10; about 8 min on two idle cores); the sdist download ~20-85 s.
# Usage: scripts/llama_server_build.sh [DIR]   (default: .llama-server; reused when already complete)
# Prints the llama-server binary's path on the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${1:-${BATON_LLAMA_DIR:-.llama-server}}"
VERSION="0.3.36"   # llama-cpp-python; its vendor/llama.cpp is the server under test
SPEC="llama-cpp-python==$VERSION"
MARKER="$DIR/.baton-llama-complete"
BINARY="$DIR/build/bin/llama-server"

if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$SPEC" && -x "$BINARY" ]]; then
  echo "llama-server build reused: $DIR" >&2
  echo "$BINARY"
  exit 0
fi

start=$(date +%s)
rm -rf "$DIR"
mkdir -p "$DIR/sdist"
python3 -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps "$SPEC" -d "$DIR/sdist" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
tar -xzf "$DIR/sdist/llama_cpp_python-$VERSION.tar.gz" -C "$DIR/sdist"
SOURCE="$DIR/sdist/llama_cpp_python-$VERSION/vendor/llama.cpp"
fetched=$(date +%s)
cmake -S "$SOURCE" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$(cd "$DIR" && pwd)/build/bin" >&2
cmake --build "$DIR/build" --target llama-server -j2 >&2
"$BINARY" --version >&2
echo "$SPEC" > "$MARKER"
end=$(date +%s)
echo "llama-server built in $(( end - start )) s (sdist $(( fetched - start )) s, build $(( end - fetched )) s): $DIR" >&2
echo "$BINARY"
