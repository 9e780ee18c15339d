"""oneDNN's sgemm against OpenBLAS on the shapes where sgemm_rowmajor's routing depends on a
leading dimension (phi_kernels/cpu/sgemm.cc), with the stride as the models make it and
moved by 16 floats, 1 thread, their repeats interleaved. With --routes: the model shapes
and the edges of the routing rule instead, dense (docs/notes/gemm_backends.md). With
--restride: Oar's matmul on transposed A's whose rows lie a multiple of 4 KiB apart, without
and with the copy to a padded stride (OAR_SGEMM_RESTRIDE=0 / 1, Note [Transposed A at a 4 KiB
stride] in phi_kernels/cpu/sgemm.cc), each in its own process, and what sgemm_rowmajor
picks by itself.

    OMP_NUM_THREADS=1 python3 bench/sgemm_strides.py [--routes | --restride]
"""
import ctypes
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy_openblas32

I64, F, P = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
CASES = [  # (what, ta, tb, M, N, K, lda choices, ldb choices)
    ("LSTM dW_hh = da^T h_prev; GPT fc2 dW", 1, 0, 1024, 256, 1024, (1024, 1040), (256,)),
    ("LSTM dW_ih = da^T x", 1, 0, 1024, 128, 1024, (1024, 1040), (128,)),
    ("TN lda 512", 1, 0, 512, 256, 1024, (512, 528), (256,)),
    ("GPT q/k/v/o dW (lda 256)", 1, 0, 256, 256, 1024, (256, 272), (256,)),
    ("GPT fc1 dx (NT, ldb 1024)", 0, 1, 1024, 256, 1024, (1024,), (1024, 1040)),
    ("GPT fc2 forward (NN, lda 1024)", 0, 0, 1024, 256, 1024, (1024, 1040), (256,)),
    ("LSTM dh = da W_hh (strided da)", 0, 0, 16, 256, 1024, (65536, 65552), (256,)),
    ("LSTM step h W_hh^T", 0, 1, 16, 1024, 256, (16384, 16400), (256,)),
]

ROUTES = [(what, ta, tb, M, N, K, ((M if ta else K),), ((K if tb else N),)) for what, ta, tb, M, N, K in [
    ("square", 0, 0, 1024, 1024, 1024), ("square", 0, 0, 2048, 2048, 2048), ("MLP fc1", 0, 0, 128, 512, 784),
    ("MLP fc2", 0, 0, 128, 512, 512), ("MLP fc1 dW", 1, 0, 784, 512, 128), ("MLP fc1 dX", 0, 1, 128, 784, 512),
    ("GPT qkv", 0, 0, 1024, 768, 256), ("GPT qkv dW", 1, 0, 256, 768, 1024), ("ldb 1024", 0, 0, 128, 1024, 256),
    ("ldb 512", 0, 0, 128, 512, 4608), ("lda 1024", 1, 0, 1024, 256, 1024), ("LSTM step", 0, 0, 16, 1024, 256),
    ("short A", 0, 0, 16, 520, 600), ("N 16", 0, 0, 128, 16, 512), ("classifier head", 0, 0, 128, 10, 512),
    ("head dW", 1, 0, 512, 10, 128), ("N 4", 0, 0, 128, 4, 512), ("head, B^T", 0, 1, 128, 10, 512)]]


def libs():
    dn = ctypes.CDLL("libdnnl.so.2")
    dn.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, I64, I64, I64, F, P, I64, P, I64, F, P, I64]
    ob = ctypes.CDLL(f"{scipy_openblas32.get_lib_dir()}/libscipy_openblas.so")
    ob.scipy_openblas_set_num_threads(1)
    c = ctypes.c_int
    ob.scipy_cblas_sgemm.argtypes = [c, c, c, c, c, c, F, P, c, P, c, F, P, c]
    return dn, ob


RESTRIDE = [(M, N, K) for M, K in ((1024, 1024), (2048, 1024), (4096, 1024), (1024, 4096), (2048, 512))
            for N in (128, 256, 512, 768, 1024)]
RESTRIDE_CHILD = """
import json, statistics, sys, time
import oar
out = {}
for M, N, K in json.loads(sys.argv[1]):
    x, g = oar.randn([K, M]), oar.randn([K, N])
    f = lambda: oar.matmul(x, g, transpose_x=True)
    n = max(1, int(3e8 / (2 * M * N * K)))
    f()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        times.append((time.perf_counter() - t0) / n * 1e3)
    out[f"{M}x{N}x{K}"] = statistics.median(times)
print(json.dumps(out))
"""


def restride():
    import json
    lib = ctypes.CDLL([ln.split()[-1] for ln in open("/proc/self/maps") if "liboar_core" in ln][0])
    lib.oar_sgemm_restrides_a.argtypes = [ctypes.c_int] + [I64] * 4
    runs = {"0": [], "1": []}
    for _ in range(3):  # the modes' processes alternate; the median of three per shape
        for mode in runs:
            env = {**os.environ, "OAR_SGEMM_RESTRIDE": mode}
            r = subprocess.run([sys.executable, "-c", RESTRIDE_CHILD, json.dumps(RESTRIDE)], env=env, check=True,
                               capture_output=True, text=True)
            runs[mode].append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("TN M x N x K (lda = M): ms without the copy, with it (median of 3 processes each), "
          "and whether sgemm_rowmajor copies by itself")
    for M, N, K in RESTRIDE:
        k = f"{M}x{N}x{K}"
        a, b = (statistics.median(r[k] for r in runs[m]) for m in ("0", "1"))
        print(f"{k:16s} {a:8.3f} {b:8.3f}  {b / a:5.2f}x  {'copies' if lib.oar_sgemm_restrides_a(1, M, N, K, M) else ''}")


def main():
    if "--restride" in sys.argv:
        import oar  # noqa: F401  (loads liboar_core for the ctypes query)
        return restride()
    dn, ob = libs()
    for what, ta, tb, M, N, K, ldas, ldbs in (ROUTES if "--routes" in sys.argv else CASES):
        fns, keep = {}, []
        for lda in ldas:
            for ldb in ldbs:
                a = np.random.rand((K if ta else M) * lda).astype(np.float32)
                b = np.random.rand((N if tb else K) * ldb).astype(np.float32)
                c = np.empty(M * N, np.float32)
                keep.append((a, b, c))
                pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
                fns[f"onednn {lda}/{ldb}"] = (lambda pa=pa, pb=pb, pc=pc, lda=lda, ldb=ldb: dn.dnnl_sgemm(
                    b"T" if ta else b"N", b"T" if tb else b"N", M, N, K, 1.0, pa, lda, pb, ldb, 0.0, pc, N))
                fns[f"openblas {lda}/{ldb}"] = (lambda pa=pa, pb=pb, pc=pc, lda=lda, ldb=ldb: ob.scipy_cblas_sgemm(
                    101, 112 if ta else 111, 112 if tb else 111, M, N, K, 1.0, pa, lda, pb, ldb, 0.0, pc, N))
        n = max(1, int(3e7 / (2 * M * N * K)))
        times = {k: [] for k in fns}
        for f in fns.values():
            f()
        for _ in range(5):
            for k, f in fns.items():
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                times[k].append((time.perf_counter() - t0) / n * 1e3)
        row = ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in times.items())
        print(f"{'T' if ta else 'N'}{'T' if tb else 'N'} {M}x{N}x{K} ({what}) ms, lda/ldb: {row}")


if __name__ == "__main__":
    main()
