#!/usr/bin/env bash
# The browser test's Chromium (tests/hermes_e2e/test_report_in_browser.py): Debian's chromium + chromium-driver,
# installed with apt when missing and run as root (CI on a fresh Debian machine). Never a browser download of a test
# tool's own.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    chromium --version
else
    echo "chromium is missing and this is not root on Debian: the browser test skips (sudo apt-get install -y" \
         "chromium chromium-driver to run it)" >&2
fi
