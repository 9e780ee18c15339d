#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run (issue 16; Note [Robustness]):
#   bash scripts/sanitize.sh [pytest args...]      e.g. bash scripts/sanitize.sh -x tests/python/ops
# 1. builds Oar with -DOAR_SANITIZE=address,undefined in build-asan/ (not the pip build);
# 2. runs the C++ tests (ctest) under ASan/UBSan;
# 3. runs the Python suite against that build with the ASan runtime preloaded (Python itself
#    is not instrumented, so its allocations are not leak-checked: detect_leaks=0), through
#    scripts/dev_env.sh (the build's extension, not the editable install).
# OAR_SANITIZE_STEPS picks steps (default "build ctest pytest"), e.g. OAR_SANITIZE_STEPS=pytest
# to run the Python suite in parts against a finished build.
# Slow (an instrumented build on a shared machine): nice -n 10 like the other builds, CMAKE_BUILD_PARALLEL_LEVEL=2.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${OAR_ASAN_BUILD:-$root/build-asan}
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
py=${PYTHON:-python3}
steps=${OAR_SANITIZE_STEPS:-build ctest pytest}

if [[ " $steps " == *" build "* ]]; then
  echo "[sanitize] configure + build in $build"
  pyinc=$("$py" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
  # The shipped configuration (no OAR_NATIVE_ARCH): the baseline kernels and every per-ISA copy
  # are instrumented, and the copy the CPU dispatches to is the one the tests run. -g1 (line
  # tables) is enough for ASan's stack traces and compiles faster than full debug info (-g).
  # -O1 everywhere, kernels included (cmake/cpu_dispatch.cmake): ASan's recommended level, and
  # the -O2/-O3 instrumented build did not finish in hours on a shared 2-core machine.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOAR_SANITIZE=address,undefined \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -DPython_EXECUTABLE="$(command -v "$py")" ${pyinc:+-Dpybind11_DIR=$pyinc} >/dev/null
  nice -n 10 ninja -C "$build" -j "$jobs"
fi

# allocator_may_return_null=1: an allocation past what the machine has returns null, as glibc's
# malloc does, and Oar turns that into MemoryError (tests/python/test_robustness.py); ASan's
# default would abort the process on it instead.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_init_order=1:detect_stack_use_after_return=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [[ " $steps " == *" ctest "* ]]; then
  echo "[sanitize] C++ tests"
  nice -n 10 ctest --test-dir "$build" -j "$jobs" --output-on-failure
fi
[[ " $steps " == *" pytest "* ]] || exit 0

echo "[sanitize] Python suite (LD_PRELOAD of the ASan runtime)"
# A report is fatal (it aborts the whole pytest process), so pytest captures only Python's
# sys.stderr (--capture=sys): a report written to file descriptor 2 stays in the run's output
# instead of dying with the test's captured output. Reports also go to files: one in a child
# process (a fuzz worker, a launched rank) would otherwise only show as that child's crash. Every report under $reports fails the run (OAR_SANITIZE_REPORTS moves the folder, for
# runs of the suite in parts at once), except ASan's reports of a SIGSEGV sent with kill()
# (frame #0 `kill`): tests that check crash handling (the fuzzer's pool, the launcher) kill
# their own children on purpose, and ASan reports every SIGSEGV it receives.
reports=${OAR_SANITIZE_REPORTS:-$build/sanitizer-reports}
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS=$ASAN_OPTIONS:log_path=$reports/asan
export UBSAN_OPTIONS=$UBSAN_OPTIONS:log_path=$reports/ubsan
print_reports() {
  local rc=$1 f found=0
  for f in "$reports"/*; do
    [ -e "$f" ] || continue
    grep -q "ERROR: AddressSanitizer\|runtime error:" "$f" || continue  # warnings only
    if grep -q "ERROR: AddressSanitizer: SEGV" "$f" && grep -q "^    #0 .* in kill " "$f"; then
      echo "[sanitize] $(basename "$f"): a SIGSEGV sent with kill() (a test's deliberate crash)"
      continue
    fi
    echo "[sanitize] report $(basename "$f"):"; cat "$f"; found=1
  done
  [ "$found" = 0 ] || rc=1
  return "$rc"
}
asan_rt=$(g++ -print-file-name=libasan.so)
ubsan_rt=$(g++ -print-file-name=libubsan.so)
# OAR_FUZZ_NO_RLIMIT: ASan reserves terabytes of address space, so the fuzzer's per-worker
# address-space limit would make every worker fail at start.
# shellcheck source=/dev/null
source scripts/dev_env.sh "$build"
rc=0
LD_PRELOAD="$asan_rt $ubsan_rt" OAR_FUZZ_NO_RLIMIT=1 nice -n 10 "$py" -m pytest -p no:cacheprovider -o addopts="" -q --capture=sys \
  "${@:-tests/python}" || rc=$?
print_reports "$rc"
