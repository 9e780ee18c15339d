#!/usr/bin/env bash
# Creates bench/.venv with CPU PyTorch + numpy from PyPI, idempotently.
# PyPI's Linux torch wheel is the CUDA build and its deps are ~2.3 GB of nvidia-* wheels.
# We install torch with --no-deps plus its pure-Python deps (~1.3 GB venv), then give
# it no-op stand-ins for the CUDA libraries (torch_cuda_stubs.py), so torch runs on CPU.
# Set BENCH_TORCH_FULL=1 to install the real nvidia-* dependencies instead.
# Torch is only a dependency of this benchmark venv, never of Oar itself.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VENV=$BENCH/.venv
PY=$VENV/bin/python
TORCH_SPEC=${TORCH_SPEC:-torch==2.15.0}
CHECK='import numpy, torch; torch.randn(3) @ torch.randn(3); print("[setup_venv] ok: torch", torch.__version__)'

if [ -x "$PY" ] && "$PY" -c "$CHECK" 2>/dev/null; then exit 0; fi

[ -x "$PY" ] || python3 -m venv "$VENV"
pip() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }
if [ "${BENCH_TORCH_FULL:-0}" = 1 ]; then
  echo "[setup_venv] pip install $TORCH_SPEC numpy (with nvidia-* deps)"
  pip "$TORCH_SPEC" numpy
else
  echo "[setup_venv] pip install --no-deps $TORCH_SPEC; numpy and torch's pure-Python deps"
  pip numpy filelock typing-extensions sympy networkx jinja2 fsspec
  pip --no-deps "$TORCH_SPEC"
  "$PY" -c 'import torch' >/dev/null 2>&1 ||
    "$PY" "$BENCH/torch_cuda_stubs.py" "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch/lib"
fi
"$PY" -c "$CHECK" || {
  echo "[setup_venv] torch does not work; try BENCH_TORCH_FULL=1 bash bench/setup_venv.sh" >&2
  exit 1
}
