#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run (issue 16; Note [Robustness]):
#   bash scripts/sanitize.sh [pytest args...]      e.g. bash scripts/sanitize.sh -x tests/python/ops
# 1. builds Oar with -DOAR_SANITIZE=address,undefined in build-asan/ (not the pip build);
# 2. runs the C++ tests (ctest) under ASan/UBSan;
# 3. runs the Python suite against that build with the ASan runtime preloaded (Python itself
#    is not instrumented, so its allocations are not leak-checked: detect_leaks=0), from a
#    venv of its own in build-asan/venv (the pip-installed oar would shadow the build).
# Slow (an instrumented build on a shared machine): nice -n 15, CMAKE_BUILD_PARALLEL_LEVEL=2.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${OAR_ASAN_BUILD:-$root/build-asan}
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
py=${PYTHON:-python3}

echo "[sanitize] configure + build in $build"
pyinc=$("$py" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOAR_SANITIZE=address,undefined \
  -DOAR_NATIVE_ARCH=ON -DPython_EXECUTABLE="$(command -v "$py")" ${pyinc:+-Dpybind11_DIR=$pyinc} >/dev/null
nice -n 15 ninja -C "$build" -j "$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_init_order=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "[sanitize] C++ tests"
nice -n 15 ctest --test-dir "$build" -j "$jobs" --output-on-failure

echo "[sanitize] Python suite (LD_PRELOAD of the ASan runtime)"
venv=$build/venv
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q numpy pytest pyyaml scikit-learn onnx onnxruntime
fi
asan_rt=$(g++ -print-file-name=libasan.so)
ubsan_rt=$(g++ -print-file-name=libubsan.so)
# OAR_FUZZ_NO_RLIMIT: ASan reserves terabytes of address space, so the fuzzer's per-worker
# address-space limit would make every worker fail at start.
LD_PRELOAD="$asan_rt $ubsan_rt" OAR_EXT_DIR=$build/python/oar PYTHONPATH=$root/python \
  OAR_FUZZ_NO_RLIMIT=1 nice -n 15 "$venv/bin/python" -m pytest -p no:cacheprovider -o addopts="" -q \
  "${@:-tests/python}"
