#!/usr/bin/env bash
# Set up (first time only) and start the dashboard on http://127.0.0.1:8501
# with the embedded default workspace (./workspace, or $SHARDSCOPE_WORKSPACE). app/shardscope_server.py
# serves app/main.py and refuses any request whose Host is not 127.0.0.1, localhost or [::1].
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export SHARDSCOPE_WORKSPACE="${SHARDSCOPE_WORKSPACE:-$PWD/workspace}"
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/streamlit run app/shardscope_server.py --server.address 127.0.0.1 --server.port 8501 "$@"
