#!/usr/bin/env bash
# Usage: bash bench/run.sh [suite] [driver args...]   (suite defaults to core)
# Sets up bench/.venv (torch) and runs bench/bench_<suite>.py with the project's python3.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE=${1:-core}
shift || true
[ -f "$BENCH/bench_$SUITE.py" ] || { echo "no suite $SUITE (bench/bench_$SUITE.py)" >&2; exit 2; }
bash "$BENCH/setup_venv.sh"
exec "${PYTHON:-python3}" "$BENCH/bench_$SUITE.py" "$@"
