"""NVRTC compiles the CUDA C of every kernel the fusion compiler made in this process
(cinn/codegen/cuda_codegen.h). test_cinn.py's fixture calls check_new_kernels() after
each test, so every group the CINN tests create is also compiled for sm_90.

With OAR_CINN_GPU_EXPORT=<folder> (bench/cinn_gpu.py export sets it), the first call of
each kernel is recorded too (its inputs and the CPU kernel's outputs), and at exit the
calls, their kernels' CUBINs and launch data are written there for bench/cinn_gpu.py run
to replay on a GPU."""
import atexit
import json
import os
import re

import numpy as np

from oar import _C

_checked = set()
_EXPORT = os.environ.get("OAR_CINN_GPU_EXPORT")
_exported = {"kernels": {}, "calls": []}  # name -> kernel entry; recorded calls


def structure_errors(k):
    """What is wrong with the emitted source's structure (empty when nothing)."""
    src, name = k["source"], k["name"]
    errs = []
    if not re.search(r'extern "C" __global__ void __launch_bounds__\(%d\) %s\(long long rows, long long cols'
                     % (k["block"], name), src):
        errs.append("kernel signature")
    # Live reductions: a rewrite (one_pass_variance) leaves dead nodes, which the emitter
    # skips and names in a comment, as the CPU generator skips them.
    # Column reductions (Note [Column reductions]), in any schedule: a sum or mean is an
    # atomicAdd into the zeroed output, a max or min a compare-and-swap loop
    # (oar_atomic_max/min) into the output filled with -inf/inf, one call per element.
    lk = k["loop_kernel"]
    adds = len(re.findall(r":col = reduce_(sum|mean)\(", lk))
    extrema = {op: len(re.findall(r":col = reduce_%s\(" % op, lk)) for op in ("max", "min")}
    # Channel reductions (Note [Channel reductions]): the row's sum atomically added into
    # the element of its kept indices, one per reduction.
    chans = len(re.findall(r"/chan_(sum|mean)\[", lk))
    adds += chans
    columns = adds - chans + sum(extrema.values())
    reductions = len(re.findall(r"= reduce_", lk)) - columns - len(re.findall(r"dead \(reduce_", src))
    # Every body twice (Note [CUDA vector accesses]): V elements per chunk, then one; a
    # column reduction's atomic is per element (V + 1 copies), the rest per row (2). A row
    # kernel whose static row fits in registers has a third body (Note [CUDA resident
    # rows]): K chunks of V per thread. A float32 column sum or mean adds a V-chunk with
    # one float4 atomic on sm_90, its V scalar ones under #else (Note [CUDA column reductions]).
    V = 2 if lk.startswith("float64") else 4
    if "if (cols %% %d == 0" % V not in src:
        errs.append("vector body test")
    res = re.findall(r"// the row in registers: (\d+) chunks of %d per thread" % V, src)
    bodies = 2 + len(res)
    chunks = 1 + sum(int(K) for K in res)  # V-chunks per column and element in the vector bodies
    per_elem = V + 1 + sum(int(K) * V for K in res)
    col_adds = adds - chans
    vec_adds = col_adds * chunks if lk.startswith("float32") else 0
    if src.count("atomicAdd(") != col_adds * per_elem + vec_adds + chans * bodies or any(
            src.count("oar_atomic_%s(&" % op) != n * per_elem for op, n in extrema.items()):
        errs.append("column reductions")
    if src.count("atomicAdd(reinterpret_cast<float4*>(") != vec_adds or \
            src.count("#if __CUDA_ARCH__ >= 900") != vec_adds:
        errs.append("float4 column atomics")
    # erf's reciprocal (t = 1 / (1 + 0.3275911 |z|) >= 1): __frcp_rn's fast path alone
    # (Note [CUDA erf reciprocal]).
    if "oar_erf_e(float z" in src and ("const float t = oar_rcp_ge1(" not in src or "rcp.approx.ftz.f32" not in src):
        errs.append("erf reciprocal")
    if k["schedule"] == "elementwise":
        # the vector body's indices in int, under 2^31 elements (Note [CUDA 32-bit indices])
        if reductions or src.count("i += stride) {") != 2 or "const int cols32 = (int)cols, n32 = (int)n;" not in src \
                or " && n + (long long)gridDim.x * blockDim.x * %d <= 2147483647LL) {" % V not in src:
            errs.append("elementwise kernel without its two grid-stride loops")
    elif k["schedule"] == "columns":  # Note [CUDA column reductions]
        if reductions or not columns or src.count("for (long long row = rg; row < rows; row += groups) {") != 2:
            errs.append("column kernel without its row-group loop")
    elif k["schedule"] == "warp_per_row":
        if src.count("= oar_warp_reduce(") != bodies * reductions or "__syncthreads" in src:
            errs.append("warp-per-row reductions")
    elif k["schedule"] == "block_per_row":
        # Alone through oar_block_reduce, or with the rest of its sweep (Note [CUDA block
        # reductions]: one pair of barriers per sweep, its results read from smem).
        if src.count("= oar_block_reduce(") + src.count(" = smem[") != bodies * reductions or \
                "__shared__" not in src:
            errs.append("block-per-row reductions")
    else:
        errs.append("unknown schedule " + k["schedule"])
    return errs


def check_new_kernels():
    """Compiles every kernel not checked yet to an sm_90 CUBIN; returns how many."""
    n = 0
    for k in _C.cinn.cuda_kernels():
        if k["name"] in _checked:
            continue
        errs = structure_errors(k)
        assert not errs, (errs, k["source"])
        if _C.cinn.compiled_with_nvrtc():
            r = _C.cinn.nvrtc_compile(k["source"], k["name"], True)  # raises with NVRTC's log
            assert r["binary"][:4] == b"\x7fELF", k["name"]
            if _EXPORT:
                _exported["kernels"][k["name"]] = dict(k, cubin=r["binary"])
        _checked.add(k["name"])
        n += 1
    if _EXPORT:
        _exported["calls"] += _C.cinn.take_kernel_calls()
    return n


def keep_calls(calls):
    """Calls a test took from the recorder that belong to the export (test_cinn_cuda)."""
    if _EXPORT:
        _exported["calls"] += calls


def write_export(folder, kernels, calls):
    """manifest.json (per call: the kernel's name, schedule, launch, output init, loop
    kernel and CUDA C, the tensors' dtypes and dims) and data.npz (per call i: c<i>_in<j>,
    c<i>_out<j> as raw bytes, and k<name> the kernel's CUBIN)."""
    os.makedirs(folder, exist_ok=True)
    arrays, entries = {}, []
    for i, c in enumerate(calls):
        k = kernels.get(c["name"])
        if k is None or "grid" not in c:
            continue
        arrays.setdefault("k" + k["name"], np.frombuffer(k["cubin"], np.uint8))
        for side in ("in", "out"):
            for j, (_, _, raw) in enumerate(c[side + "puts"]):
                if raw is not None:
                    arrays["c%d_%s%d" % (i, side, j)] = np.frombuffer(raw, np.uint8)
        entries.append({
            "call": i, "name": c["name"], "rows": c["rows"], "cols": c["cols"], "inner": c["inner"],
            "grid": c["grid"], "block": c["block"], "schedule": k["schedule"], "col_outer": k["col_outer"],
            "output_init": k["output_init"], "loop_kernel": k["loop_kernel"], "source": k["source"],
            "inputs": [[dt, list(d)] for dt, d, _ in c["inputs"]],
            "outputs": [[dt, list(d)] for dt, d, _ in c["outputs"]],
            "tag": c.get("tag", "")})
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(entries, f)
    np.savez(os.path.join(folder, "data.npz"), **arrays)
    return len(entries)


if _EXPORT:
    _C.cinn.record_kernel_calls(True, int(os.environ.get("OAR_CINN_GPU_EXPORT_BYTES", 1 << 20)))
    atexit.register(lambda: write_export(_EXPORT, _exported["kernels"], _exported["calls"]))
