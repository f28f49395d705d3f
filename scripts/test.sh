#!/usr/bin/env bash
# Set up (venv, dev requirements, Debian packages for the browser, Slurm and multi-node tests) and run every test.
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not integration".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
# Debian packages the tests use, installed only when missing: chromium (browser tests), and a
# real Slurm + munge (the two-node test cluster), iproute2 (the multi-node network namespace) and Open MPI
# (mpirun on CPU).
missing=()
if command -v dpkg >/dev/null; then
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  for pkg in munge slurmctld slurmd slurm-client iproute2 openmpi-bin libopenmpi-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
  else
    echo "some tests need Debian packages: sudo apt-get install -y ${missing[*]}" >&2
  fi
fi
export PATH="$PWD/.venv/bin:$PATH"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy  # types of core, app and pages ([tool.mypy] in pyproject.toml): 0 errors
# Two xdist workers, a file on one worker; the files with real runs and browser tests are one unit, run at the
# usual priority, the rest a little lower (tests/conftest.py); SHARDSCOPE_TEST_WORKERS=0 runs it in one process.
exec .venv/bin/python -m pytest -n "${SHARDSCOPE_TEST_WORKERS:-2}" --dist loadfile "$@"
