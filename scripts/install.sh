#!/bin/sh
# Create the virtualenv and install the pinned requirements, once per requirements*.txt.
set -eu
python=$1
venv=$2
stamp="$venv/.requirements.sha256"
want=$(cat requirements.txt bench/requirements.txt | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    exit 0
fi
command -v "$python" >/dev/null 2>&1 || python=python3
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$(grep -E '^torch==' requirements.txt)"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt
# bench_scale's baseline (rank-bm25, faiss-cpu): two wheels, a few seconds, so the tests run it.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
echo "$want" > "$stamp"
