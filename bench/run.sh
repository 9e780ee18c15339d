#!/usr/bin/env bash
# Usage: bash bench/run.sh [suite] [--isa avx2|avx512] [driver args...]   (suite defaults to core)
# Sets up bench/.venv (torch) and runs bench/bench_<suite>.py with the project's python3.
# --isa forces both frameworks to one vector ISA (BENCH_ISA, read by bench/common.py for
# every suite; the results JSON records it as forced_isa).
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE=${1:-core}
shift || true
[ -f "$BENCH/bench_$SUITE.py" ] || { echo "no suite $SUITE (bench/bench_$SUITE.py)" >&2; exit 2; }
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --isa) [ $# -ge 2 ] || { echo "bench/run.sh: --isa needs a value (avx2, avx512)" >&2; exit 2; }
           export BENCH_ISA=$2; shift 2 ;;
    --isa=*) export BENCH_ISA=${1#--isa=}; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
bash "$BENCH/setup_venv.sh"
exec "${PYTHON:-python3}" "$BENCH/bench_$SUITE.py" ${ARGS[@]+"${ARGS[@]}"}
