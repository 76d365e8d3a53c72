#!/bin/sh
# Install Debian's Chromium for the browser tests (tests/browser), once.
# Playwright drives /usr/bin/chromium; it never downloads a browser of its own.
set -eu
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1; then
    as_root="sudo"
else
    echo "install-browser.sh: /usr/bin/chromium is missing and installing it needs root (no sudo here)." >&2
    echo "Run as root: apt-get update && apt-get install -y --no-install-recommends chromium" >&2
    exit 1
fi
echo "Installing Debian's chromium for the browser tests..."
$as_root apt-get update -qq
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
