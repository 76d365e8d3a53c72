#!/bin/sh
# Install Debian's Tesseract (English) and poppler's pdftoppm, which OCR of scanned PDF pages
# needs (apps/pipeline/parsing/ocr.py), once. `make test` needs them and fails without them;
# `make run` passes --optional: without them the server still runs, and a scanned PDF fails to
# ingest with a message saying OCR is not installed.
set -eu
optional=false
[ "${1:-}" = "--optional" ] && optional=true
command -v tesseract >/dev/null 2>&1 && command -v pdftoppm >/dev/null 2>&1 \
    && tesseract --list-langs 2>/dev/null | grep -qx eng && exit 0
give_up() {
    echo "install-ocr.sh: $1" >&2
    echo "Run as root: apt-get update && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng poppler-utils" >&2
    if $optional; then
        echo "install-ocr.sh: going on without OCR: scanned PDF pages will be refused with a message." >&2
        exit 0
    fi
    exit 1
}
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo"
else
    give_up "Tesseract or pdftoppm is missing and installing them needs root (no sudo here)."
fi
command -v apt-get >/dev/null 2>&1 || give_up "Tesseract or pdftoppm is missing, and this is not a Debian system (no apt-get)."
echo "Installing Debian's tesseract-ocr, tesseract-ocr-eng and poppler-utils for OCR..."
$as_root apt-get update -qq || give_up "apt-get update failed."
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    tesseract-ocr tesseract-ocr-eng poppler-utils || give_up "apt-get install failed."
