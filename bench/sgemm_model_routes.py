"""oneDNN's sgemm against OpenBLAS on every GEMM of bench_steps.py's models (and two
squares), with the library sgemm_rowmajor routes each to (oar_sgemm_route), 1 thread, CPU
time (process_time: a loaded machine's descheduling does not count), repeats interleaved.

    OMP_NUM_THREADS=1 python3 bench/sgemm_model_routes.py [what ...]
    DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1 python3 bench/sgemm_model_routes.py

The second is an AVX2 host's view on an AVX-512 one (Note [AVX2 on an AVX-512 machine]);
the table is in docs/notes/gemm_backends.md. A row marked "<--" is routed to the slower one.
"""
import ctypes
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import oar  # noqa: E402,F401  (loads liboar_core, whose oar_sgemm_route is the rule)
import sgemm_strides as S  # noqa: E402

core = common.ctypes_library("liboar_core")
core.oar_sgemm_route.restype = ctypes.c_char_p
I = ctypes.c_int64
core.oar_sgemm_route.argtypes = [ctypes.c_int, ctypes.c_int, I, I, I, I, I]
SH = [  # what, ta, tb, M, N, K, lda, ldb
 ("gpt qkvo fwd", 0,0,1024,256,256, 256,256), ("gpt fc1 fwd", 0,0,1024,1024,256,256,1024),
 ("gpt fc2 fwd", 0,0,1024,256,1024,1024,256), ("gpt head fwd", 0,0,1024,1000,256,256,1000),
 ("gpt qkvo dX", 0,1,1024,256,256,256,256), ("gpt fc1 dX", 0,1,1024,256,1024,1024,1024),
 ("gpt fc2 dX", 0,1,1024,1024,256,256,256), ("gpt head dX", 0,1,1024,256,1000,1000,1000),
 ("gpt qkvo dW", 1,0,256,256,1024,256,256), ("gpt fc1 dW", 1,0,256,1024,1024,256,1024),
 ("gpt fc2 dW", 1,0,1024,256,1024,1024,256), ("gpt head dW", 1,0,256,1000,1024,256,1000),
 ("attn qk^T", 0,1,128,128,64,256,256), ("attn pv", 0,0,128,64,128,128,256),
 ("mlp fc1", 0,0,128,512,784,784,512), ("mlp fc1 dW", 1,0,784,512,128,784,512), ("mlp fc2 dX", 0,1,128,512,512,512,512),
 ("lstm step", 0,1,16,1024,256,256,256), ("lstm x proj", 0,1,1024,1024,128,128,128), ("lstm dW_hh", 1,0,1024,256,1024,1024,256),
 ("sq1024", 0,0,1024,1024,1024,1024,1024), ("sq512", 0,0,512,512,512,512,512),
]
dn, ob = S.libs()
only = sys.argv[1:]
for what, ta, tb, M, N, K, lda, ldb in SH:
    if only and not any(o in what for o in only): continue
    a = np.random.rand((K if ta else M) * lda).astype(np.float32)
    b = np.random.rand((N if tb else K) * ldb).astype(np.float32)
    c = np.empty(M * N, np.float32)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    fns = {"onednn": lambda: dn.dnnl_sgemm(b"T" if ta else b"N", b"T" if tb else b"N", M, N, K, 1.0, pa, lda, pb, ldb, 0.0, pc, N),
           "openblas": lambda: ob.scipy_cblas_sgemm(101, 112 if ta else 111, 112 if tb else 111, M, N, K, 1.0, pa, lda, pb, ldb, 0.0, pc, N)}
    n = max(1, int(2e8 / (2 * M * N * K)))
    times = {k: [] for k in fns}
    for f in fns.values(): f()
    for _ in range(7):
        for k, f in fns.items():
            t0 = time.process_time()
            for _ in range(n): f()
            times[k].append((time.process_time() - t0) / n * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    route = core.oar_sgemm_route(ta, tb, M, N, K, lda, ldb).decode()
    best = min(med, key=med.get)
    gf = {k: 2*M*N*K/v/1e6 for k, v in med.items()}
    print(f"{what:14s} {'T' if ta else 'N'}{'T' if tb else 'N'} {M}x{N}x{K} lda {lda} ldb {ldb}: onednn {med['onednn']:.3f} ms ({gf['onednn']:.0f} GF/s), openblas {med['openblas']:.3f} ({gf['openblas']:.0f}); route {route}{'' if route == best else '  <-- slower by %.2fx' % (med[route]/med[best])}", flush=True)
