#!/usr/bin/env bash
# The README's test command: set up from scratch if needed, lint (scripts/lint.sh), then
# run every test (C++ GoogleTest through ctest, then the Python suite through pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh  # lint's tools; setup.sh finds them installed
bash scripts/lint.sh          # before the build: a lint failure fails fast
bash scripts/setup.sh
build_dir=$(ls -d build/cp3* | head -n 1)
# No kernel tuning records (Note [Tuning records]) from this machine's earlier runs.
export FLAGS_oar_tuning_cache=0
echo "[test] C++ tests (ctest in $build_dir)"
ctest --test-dir "$build_dir" --output-on-failure -j 2
echo "[test] Python tests"
python3 -m pytest tests/python -p no:cacheprovider
# The API and file fuzzer (tests/fuzz, Note [Robustness]): ~2 minutes with today's seed, so
# each day's CI explores new calls; a crash or hang fails CI with a reproducer under fuzz-findings/.
echo "[test] fuzzer (2 minutes, seed $(date -u +%Y%m%d))"
python3 -m tests.fuzz --time 100 --findings fuzz-findings
python3 -m tests.fuzz --files --mutations 200 --time 20 --findings fuzz-findings/files
