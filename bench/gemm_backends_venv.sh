#!/usr/bin/env bash
# Installs the GEMM libraries compared in docs/notes/gemm_backends.md into their own
# venv (bench/.gemmvenv), so that the project's Python and build are untouched.
# Idempotent: pip skips what is installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${GEMM_VENV:-$here/.gemmvenv}
PY=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  onednn-devel mkl-devel scipy-openblas32 scipy-openblas64
"$venv/bin/python" -m pip list 2>/dev/null | grep -i -E "onednn|mkl|openblas|tbb|intel"
