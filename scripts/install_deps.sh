#!/usr/bin/env bash
# Installs everything Oar needs to build and test, idempotently: Debian packages
# with apt-get, Python packages with pip. Safe to run again; it skips what is there.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache git
  libdnnl-dev            # oneDNN: matmul / convolution
  libopenblas-dev liblapacke-dev   # BLAS/LAPACK for float64 and linalg
  libsleef-dev           # vectorized transcendental math
  libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev
  libdlpack-dev
  libomp-dev
  nlohmann-json3-dev     # JSON: the C++ predictor reads the safetensors header
  zlib1g-dev             # CRC-32 of saved programs and checkpoints: crc32_combine
  libdeflate-dev         # CRC-32 with carry-less multiplies (PCLMULQDQ), ~3.5x zlib's
  clang-format           # scripts/lint.sh: clang-format and clang-format-diff
  libgloo-dev            # collectives over TCP for oar.distributed on CPU
  libfftw3-dev           # oar.fft: FFTW (single and double precision) for the fft_* kernels
  llvm-19-dev            # the fusion compiler's CPU code generator (ORC JIT); never llvm-14
)
PIP_PACKAGES=(numpy scipy pytest pyyaml scikit-build-core "pybind11>=3" ninja scikit-learn onnx onnxruntime ruff
  "scipy-openblas32>=0.3.30" pillow)  # onnx: oar.onnx.export; onnxruntime: its tests; ruff: scripts/lint.sh
# scipy-openblas32: a current OpenBLAS (run-time dispatch to AVX-512 kernels on Zen 4/5 and
# Xeon, which Debian's 0.3.21 lacks) for float32 GEMM; docs/notes/gemm_backends.md.
# pillow: vision.transforms on PIL images.

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[install_deps] apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
need_pip=0
for p in "${PIP_PACKAGES[@]}"; do
  mod=${p%%[<>=]*}; [ "$mod" = pyyaml ] && mod=yaml; [ "$mod" = scikit-build-core ] && mod=scikit_build_core
  [ "$mod" = scikit-learn ] && mod=sklearn; [ "$mod" = pillow ] && mod=PIL
  [ "$mod" = scipy-openblas32 ] && mod=scipy_openblas32
  "$PY" -c "import $mod" 2>/dev/null || need_pip=1
done
if ((need_pip)); then
  echo "[install_deps] pip install ${PIP_PACKAGES[*]}"
  "$PY" -m pip install -q "${PIP_PACKAGES[@]}"
fi
echo "[install_deps] ok"
