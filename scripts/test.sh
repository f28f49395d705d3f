#!/usr/bin/env bash
# Set up (venv, dev requirements, Debian Chromium for the browser tests) and run every test.
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not integration".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
  else
    echo "browser tests need Debian chromium: sudo apt-get install -y chromium" >&2
  fi
fi
export PATH="$PWD/.venv/bin:$PATH"
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
