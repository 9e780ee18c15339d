#!/usr/bin/env bash
# Installs the dependencies and builds/installs Oar into the current Python (editable),
# so `import oar` works. Idempotent; rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
start=$(date +%s)
echo "[setup] building and installing oar (pip install -e .)"
if ! python3 -m pip install --no-build-isolation --no-deps -e . > build_pip.log 2>&1; then
  tail -60 build_pip.log
  echo "[setup] build failed; full log in build_pip.log" >&2
  exit 1
fi
echo "[setup] oar installed in $(( $(date +%s) - start ))s"
