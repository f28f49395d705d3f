#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project's requirements. Idempotent.
# Usage: scripts/setup.sh [dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
req=requirements.txt
[ "${1:-}" = "dev" ] && req=requirements-dev.txt
stamp=".venv/.installed-$(sha1sum requirements*.txt | sha1sum | cut -c1-12)-${1:-run}"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r "$req"
  touch "$stamp"
fi
