#!/usr/bin/env bash
# The README's test command, RUNS times in a row (default 2), while stress-ng keeps every core busy:
# a suite that only passes on an idle machine does not protect main (issue 20).
# Usage: scripts/test_under_load.sh [RUNS] [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2}"
shift || true
if ! command -v stress-ng >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng) >/dev/null
  else
    echo "needs stress-ng: sudo apt-get install -y stress-ng" >&2
    exit 2
  fi
fi
stress-ng --cpu "$(nproc)" --cpu-method matrixprod --quiet &
hog=$!
trap 'kill "$hog" 2>/dev/null || true' EXIT
for run in $(seq 1 "$runs"); do
  start=$(date +%s)
  bash scripts/test.sh "$@"
  echo "run $run of $runs: passed in $(( $(date +%s) - start )) s with $(nproc) busy cores"
done
