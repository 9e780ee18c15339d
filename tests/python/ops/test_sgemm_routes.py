"""float32 GEMMs take OpenBLAS or oneDNN's sgemm by shape (phi_kernels/cpu/sgemm.cc):
matmul and fused_linear give the float64 NumPy product on every route: small products (oneDNN), every dim >= 384, a deep and wide B, an
untransposed B with rows a multiple of 512 floats apart (8..1024 rows of A, and just
outside that range), a transposed A with lda a multiple of 512 (K >= 256, N >= 64, and just
outside), transposed operands and views with a larger leading dimension.

The rule depends on the ISA oneDNN runs (AVX-512 or AVX2; docs/notes/gemm_backends.md) and,
on AVX-512, on whether OpenBLAS runs its AVX-512 kernels: test_route_table checks which
library each shape takes under each, and the products are
checked again in child processes under the other rule (DNNL_MAX_CPU_ISA=AVX2 on an
AVX-512 CPU) and with each library forced (OAR_SGEMM=openblas / onednn)."""
import json
import os
import subprocess
import sys

import numpy as np
import oar
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import peak  # noqa: E402

AVX512 = "avx512" in peak.cpu_isa()

# (M, K, N): oneDNN; all >= 384; K, N >= 512; ldb % 512 == 0 within and outside 8..1024 rows.
# Transposed A (tx) with M a multiple of 512: inside (K >= 256, N >= 64) and just outside.
SHAPES = [(3, 40, 12), (384, 400, 392), (16, 520, 600), (128, 256, 1024), (8, 64, 512),
          (7, 64, 512), (1025, 32, 512), (64, 96, 1536),
          (1024, 1024, 256), (512, 256, 64), (512, 255, 64), (512, 257, 63), (1024, 333, 65)]


def _close(got, a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[-1]))


@pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("tx,ty", [(False, False), (False, True), (True, False)])
def test_matmul_routes(mkn, tx, ty):
    m, k, n = mkn
    rng = np.random.default_rng(m * 7 + n)
    a = rng.standard_normal((k, m) if tx else (m, k)).astype("float32")
    b = rng.standard_normal((n, k) if ty else (k, n)).astype("float32")
    got = oar.matmul(oar.to_tensor(a), oar.to_tensor(b), transpose_x=tx, transpose_y=ty).numpy()
    _close(got, a.T if tx else a, b.T if ty else b)


def test_matmul_strided_b_with_a_multiple_of_512_leading_dim():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 48)).astype("float32")
    big = rng.standard_normal((48, 1024)).astype("float32")
    b = oar.to_tensor(big)[:, :300]  # a view: ldb 1024, N 300
    _close(oar.matmul(oar.to_tensor(a), b).numpy(), a, big[:, :300])


def test_fused_linear_wide_output():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 64, 256)).astype("float32")
    w = rng.standard_normal((256, 1024)).astype("float32")
    bias = rng.standard_normal(1024).astype("float32")
    got = oar._C.ops.fused_linear_activation(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(bias), False, False,
                                             "relu").numpy()
    ref = np.maximum(x.astype(np.float64) @ w + bias, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)


def test_weight_gradient_over_rows_with_a_multiple_of_512_wide_input():
    """x^T dy of a Linear with a 1024-wide input (the GPT's fc2, the LSTM's dW_ih/dW_hh):
    a transposed A with lda 1024, routed to OpenBLAS; also through a strided view of x."""
    rng = np.random.default_rng(2)
    xb = rng.standard_normal((300, 1536)).astype("float32")
    w = rng.standard_normal((1024, 70)).astype("float32")
    g = rng.standard_normal((300, 70)).astype("float32")
    for x_np, x in ((xb[:, :1024], oar.to_tensor(np.ascontiguousarray(xb[:, :1024]))),
                    (xb[:, :1024], oar.to_tensor(xb)[:, :1024])):  # the view: lda 1536
        wt = oar.to_tensor(w, stop_gradient=False)
        (oar.matmul(x, wt) * oar.to_tensor(g)).sum().backward()
        ref = x_np.astype(np.float64).T @ g.astype(np.float64)
        np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-4, atol=1e-4 * np.sqrt(300))


# (ta, tb, M, N, K, lda, ldb) -> the library on the AVX2 rule, on the AVX-512 rule (with
# OpenBLAS on its AVX-512 kernels; on AVX2 ones, as on Zen 5, oneDNN takes every shape there).
# "oar" is Oar's AVX-512 kernel (Note [AVX-512 sgemm]): M, K >= 1024, N >= 512, untransposed,
# on an Intel core; oneDNN on another AVX-512 core.
ROUTES = [
    ((0, 0, 1024, 1024, 1024, 1024, 1024), "openblas", "oar"),  # every dim >= 384
    ((0, 0, 1024, 512, 1024, 1024, 512), "openblas", "oar"),
    ((0, 0, 1024, 511, 1024, 1024, 511), "openblas", "onednn"),
    ((0, 0, 1023, 1024, 1024, 1024, 1024), "openblas", "onednn"),
    ((0, 0, 1024, 1024, 1023, 1023, 1024), "openblas", "onednn"),
    ((0, 1, 1024, 1024, 1024, 1024, 1024), "openblas", "onednn"),
    ((1, 0, 1024, 1024, 1024, 1024, 1024), "openblas", "onednn"),
    ((0, 0, 128, 512, 784, 784, 512), "openblas", "onednn"),  # MLP fc1: K, N >= 512
    ((0, 0, 128, 1024, 256, 256, 1024), "openblas", "onednn"),  # ldb % 512 == 0, 8..1024 rows
    ((0, 0, 7, 1024, 256, 256, 1024), "onednn", "onednn"),  # ... but fewer than 8 rows
    ((1, 0, 1024, 256, 1024, 1024, 256), "openblas", "onednn"),  # TN, lda % 512 == 0
    ((1, 0, 256, 256, 1024, 256, 256), "onednn", "onednn"),  # TN, lda 256
    ((0, 1, 128, 784, 512, 512, 512), "onednn", "onednn"),  # a transposed B never takes OpenBLAS
    ((0, 0, 16, 1024, 256, 256, 1024), "openblas", "onednn"),  # LSTM step
    ((0, 0, 128, 10, 512, 512, 10), "onednn", "openblas"),  # classifier head: N < 16
    ((1, 0, 512, 10, 128, 512, 10), "onednn", "openblas"),
    ((0, 1, 128, 10, 512, 512, 512), "onednn", "onednn"),  # ... with B transposed
    ((0, 0, 3, 12, 40, 40, 12), "onednn", "openblas"),
    ((0, 0, 128, 16, 512, 512, 16), "onednn", "onednn"),
]

ROUTE_CHILD = """
import ctypes, json, sys
import oar
lib = ctypes.CDLL([l.split()[-1] for l in open("/proc/self/maps") if "liboar_core" in l][0])
fn = lib.oar_sgemm_route
fn.restype = ctypes.c_char_p
fn.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_int64] * 5
print(json.dumps([fn(*args).decode() for args in json.loads(sys.argv[1])]))
"""


def _child(code, env, *args):
    r = subprocess.run([sys.executable, "-c", code, *args], env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


def _routes(env):
    out = _child(ROUTE_CHILD, env, json.dumps([list(r[0]) for r in ROUTES]))
    return json.loads(out.split("\n")[-2])


def test_route_table():
    assert _routes({"DNNL_MAX_CPU_ISA": "AVX2"}) == [r[1] for r in ROUTES]
    if AVX512:
        intel = any(ln.split(":")[-1].strip() == "GenuineIntel" for ln in open("/proc/cpuinfo")
                    if ln.startswith("vendor_id"))
        oar_or_onednn = ["oar" if intel and r[2] == "oar" else "onednn" for r in ROUTES]
        # OPENBLAS_CORETYPE sets the kernels OpenBLAS runs, and so the narrow-B routes
        assert _routes({"OPENBLAS_CORETYPE": "SkylakeX"}) == [
            r[2] if r[2] != "oar" else o for r, o in zip(ROUTES, oar_or_onednn)]
        assert _routes({"OPENBLAS_CORETYPE": "Haswell"}) == oar_or_onednn
    assert _routes({"OAR_SGEMM": "onednn"}) == ["onednn"] * len(ROUTES)
    assert _routes({"OAR_SGEMM": "openblas"}) == ["openblas"] * len(ROUTES)
    # every untransposed product where the CPU can run the kernel, oneDNN for the others
    assert _routes({"OAR_SGEMM": "oar"}) == [
        "oar" if AVX512 and not (r[0][0] or r[0][1]) else "onednn" for r in ROUTES]


@pytest.mark.parametrize("env", [{"DNNL_MAX_CPU_ISA": "AVX2"}, {"OAR_SGEMM": "onednn"}, {"OAR_SGEMM": "openblas"},
                                 {"OAR_SGEMM": "oar"},
                                 {"OAR_SGEMM": "onednn", "OAR_SGEMM_RESTRIDE": "1"}],
                         ids=lambda e: "-".join(f"{k}={v}" for k, v in e.items()))
def test_products_in_a_child(env):
    """The products of this file under the other rule and with each library forced."""
    if env.get("DNNL_MAX_CPU_ISA") and not AVX512:
        pytest.skip("the AVX2 rule is this process's own")
    out = _child("import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))", env, os.path.abspath(__file__), "-q",
                 "-o", "addopts=", "-p", "no:cacheprovider", "-k", "not child and not route_table and not restride_rule")
    assert " passed" in out and "failed" not in out, out[-2000:]


def test_transposed_a_at_a_4k_stride():
    """x^T dy with x's rows a multiple of 1024 floats apart (Note [Transposed A at a 4 KiB
    stride]): where sgemm_rowmajor first copies A to a padded stride (every such product in
    the OAR_SGEMM_RESTRIDE=1 child of test_products_in_a_child), contiguous and as a view
    narrower than its rows, at 1 and 2 threads, and the backward of a Linear."""
    rng = np.random.default_rng(5)
    before = oar.get_num_threads()
    try:
        for threads in (1, 2):
            oar.set_num_threads(threads)
            for m, k, n, width in ((2048, 1024, 256, 2048), (1500, 1024, 300, 2048), (1024, 4096, 512, 1024)):
                xb = rng.standard_normal((k, width)).astype("float32")
                g = rng.standard_normal((k, n)).astype("float32")
                x = oar.to_tensor(xb)[:, :m] if m < width else oar.to_tensor(xb)
                got = oar.matmul(x, oar.to_tensor(g), transpose_x=True).numpy()
                _close(got, xb[:, :m].T, g)
    finally:
        oar.set_num_threads(before)
    x = rng.standard_normal((1024, 2048)).astype("float32")
    w = oar.to_tensor(rng.standard_normal((2048, 256)).astype("float32"), stop_gradient=False)
    g = rng.standard_normal((1024, 256)).astype("float32")
    (oar.matmul(oar.to_tensor(x), w) * oar.to_tensor(g)).sum().backward()
    _close(w.grad.numpy(), x.T, g)


RESTRIDE_CHILD = """
import ctypes, json, sys
import oar
lib = ctypes.CDLL([l.split()[-1] for l in open("/proc/self/maps") if "liboar_core" in l][0])
fn = lib.oar_sgemm_restrides_a
fn.argtypes = [ctypes.c_int] + [ctypes.c_int64] * 4
print(json.dumps([fn(*args) for args in json.loads(sys.argv[1])]))
"""
# (ta, M, N, K, lda) -> copied under the rule on an Intel AVX-512 core
RESTRIDES = [((1, 2048, 256, 1024, 2048), 1), ((1, 2048, 512, 512, 2048), 1), ((1, 4096, 128, 1024, 4096), 1),
             ((1, 1024, 256, 4096, 1024), 1), ((1, 1024, 512, 1024, 1024), 0), ((1, 1024, 128, 4096, 1024), 0),
             ((1, 2048, 64, 1024, 2048), 0), ((1, 2048, 768, 1024, 2048), 0), ((1, 2048, 256, 256, 2048), 0),
             ((1, 1500, 256, 1024, 2048), 0), ((1, 2048, 256, 1024, 2064), 0), ((0, 2048, 256, 1024, 2048), 0)]


def test_restride_rule():
    intel = any(ln.split(":")[-1].strip() == "GenuineIntel" for ln in open("/proc/cpuinfo") if ln.startswith("vendor_id"))
    args = json.dumps([list(r[0]) for r in RESTRIDES])
    rule = [r[1] if intel and AVX512 else 0 for r in RESTRIDES]
    assert json.loads(_child(RESTRIDE_CHILD, {"OAR_SGEMM_RESTRIDE": ""}, args).split("\n")[-2]) == rule
    assert json.loads(_child(RESTRIDE_CHILD, {"OAR_SGEMM_RESTRIDE": "0"}, args).split("\n")[-2]) == [0] * len(RESTRIDES)
    forced = [int(a[0] == 1 and a[4] % 1024 == 0) for a, _ in RESTRIDES]
    assert json.loads(_child(RESTRIDE_CHILD, {"OAR_SGEMM_RESTRIDE": "1"}, args).split("\n")[-2]) == forced
    if AVX512:  # an AVX2 cap takes the AVX2 rule, where oneDNN's sgemm does not copy
        capped = json.loads(_child(RESTRIDE_CHILD, {"DNNL_MAX_CPU_ISA": "AVX2"}, args).split("\n")[-2])
        assert capped == [0] * len(RESTRIDES)
