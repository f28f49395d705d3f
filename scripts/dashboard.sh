#!/usr/bin/env bash
# Set up (first time only) and start the dashboard on http://127.0.0.1:8501
# with the embedded default workspace (./workspace, or $SHARDSCOPE_WORKSPACE).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export SHARDSCOPE_WORKSPACE="${SHARDSCOPE_WORKSPACE:-$PWD/workspace}"
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/streamlit run app/main.py --server.address 127.0.0.1 --server.port 8501 "$@"
