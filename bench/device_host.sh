#!/usr/bin/env bash
# Issue 17's CPU figures on the device machine's host CPU (an Intel Xeon with AMX on the H100
# machines seen so far), with that machine's own torch. The device machine has Python 3.12 and
# no network, so Oar travels as a bundle: a lean cp312 build (no CINN, no NVRTC, no tests) and
# the Debian libraries it needs (not glibc or libstdc++, which are there).
#
#   bash bench/device_host.sh bundle        # here: builds build/lean312 (~20 min on 2 cores the
#                                           # first time) and writes .hostbench/bundle.tar.xz (~32 MB)
#   then the device tool's run, carrying .hostbench:
#   bash bench/device_host.sh run core gemm ops1 ops2 steps
#
# Results land in $OUT. Each suite has a time limit, so a run's length is known in advance
# (core ~1 min, gemm ~1 min, ops1/ops2 ~2 min each, steps ~2 min a round). Read the
# machine's drift before trusting a ratio (docs/notes/cpu_speed_steps.md, "Stop 45").
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
bundle)
  set -e
  PY=${PY312:-$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -1)}
  [ -x "$PY" ] || { echo "device_host.sh: no Python 3.12 here (set PY312)" >&2; exit 2; }
  "$PY" -m pip install -q pybind11 pyyaml numpy scipy-openblas32
  B=build/lean312
  [ -f $B/build.ninja ] || cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DOAR_WITH_CINN=OFF \
    -DOAR_WITH_NVRTC=OFF -DOAR_BUILD_TESTS=OFF -DPython_EXECUTABLE="$PY" -DPython3_EXECUTABLE="$PY" \
    -Dpybind11_DIR="$("$PY" -c 'import pybind11; print(pybind11.get_cmake_dir())')"
  ninja -C $B
  T=$(mktemp -d); S=$T/site; L=$T/libs
  mkdir -p $S/oar/libs $S/scipy_openblas32/lib $L
  cp -r python/oar/. $S/oar/
  find $S/oar -name __pycache__ -prune -exec rm -rf {} +
  cp $B/python/oar/_C.cpython-312*.so $B/python/oar/liboar_core.so $S/oar/
  find $B -name 'liboar_inference*.so' -exec cp {} $S/oar/libs/ \;
  SO=$("$PY" -c 'import scipy_openblas32, os; print(os.path.dirname(scipy_openblas32.__file__))')
  cp "$SO"/lib/libscipy_openblas.so $S/scipy_openblas32/lib/; cp "$SO"/*.py $S/scipy_openblas32/
  strip --strip-unneeded $S/oar/*.so $S/oar/libs/*.so
  for f in $S/oar/*.so $S/oar/libs/*.so; do ldd "$f"; done | awk '/=>/{print $3}' | sort -u \
    | grep -v -E '/lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+|gomp)\.so|ld-linux|liboar|scipy_openblas' \
    | while read -r f; do cp -L "$f" $L/; done
  mkdir -p .hostbench
  grep -qx '/.hostbench/' .git/info/exclude 2>/dev/null || echo /.hostbench/ >> .git/info/exclude
  tar -C $T -cf - site libs | xz -T0 -6 > .hostbench/bundle.tar.xz
  rm -rf "$T"
  ls -la .hostbench/bundle.tar.xz ;;
run)
  shift
  mkdir -p /tmp/oarb && tar -C /tmp/oarb -xJf .hostbench/bundle.tar.xz || exit 3
  export PYTHONPATH=/tmp/oarb/site LD_LIBRARY_PATH=/tmp/oarb/libs:/tmp/oarb/site/scipy_openblas32/lib
  export BENCH_TORCH_PYTHON=${BENCH_TORCH_PYTHON:-$(command -v python3)} PYTHONUNBUFFERED=1
  OUT=${OUT:-/tmp/hostbench}; mkdir -p "$OUT"
  python3 -c "import oar, torch; x = oar.to_tensor([[1., 2.], [3., 4.]]); assert (x @ x).numpy().tolist() == [[7, 10], [15, 22]]; print('oar', oar.__file__, 'torch', torch.__version__)" || exit 3
  lscpu | grep -E 'Model name|^CPU\(s\)'; grep -m2 -E 'cpu family|^model\s' /proc/cpuinfo; uptime
  for s in "$@"; do
    case $s in
      core) timeout 300 python3 bench/bench_core.py --threads 1,2 --out "$OUT/core.json" ;;
      gemm) timeout 200 python3 bench/gemm_paths.py --sizes 2048 --rounds 3 --cpu 3 ;;
      ops1) timeout 300 python3 bench/bench_ops.py --threads 1 --out "$OUT/ops1.json" ;;
      ops2) timeout 300 python3 bench/bench_ops.py --threads 2 --out "$OUT/ops2.json" ;;
      steps) timeout 400 python3 bench/bench_steps.py --threads 1,2 --rounds "${STEP_ROUNDS:-1}" \
               --out "$OUT/steps.json" --cases "${STEP_CASES:-mlp,gpt,cnn,lstm}" ;;
      *) echo "device_host.sh: no suite $s (core, gemm, ops1, ops2, steps)" >&2 ;;
    esac 2>&1 | grep -v '^\[bench' | tee "$OUT/$s.log"
    uptime
  done ;;
*) sed -n 2,16p "$0"; exit 2 ;;
esac
