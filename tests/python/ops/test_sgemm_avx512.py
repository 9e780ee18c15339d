"""Oar's AVX-512 float32 GEMM (phi_kernels/cpu/sgemm_avx512.cc, Note [AVX-512 sgemm]) against
the float64 NumPy product: every remainder of its 6-row x 64-column tiles, 256-column blocks
and K blocks of at most 1024, K = 0, strided views of A and B, batches, two threads (the pool's
column panels), and non-finite values.

The tests run in this process through whichever path sgemm_rowmajor routes them to, and again
in a child with OAR_SGEMM=oar, which sends every untransposed float32 product to the kernel
(test_kernel_in_a_child; there each test also checks that the route is the kernel's). Without
AVX-512 the child is skipped: the kernel cannot run on such a CPU, and OAR_SGEMM=oar is oneDNN."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import oar
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import peak  # noqa: E402

AVX512 = "avx512f" in peak.cpu_flags() and {"avx512bw", "avx512dq", "avx512vl"} <= peak.cpu_flags()
FORCED = os.environ.get("OAR_SGEMM") == "oar" and AVX512


def _route(ta, tb, m, n, k, lda, ldb):
    lib = ctypes.CDLL([ln.split()[-1] for ln in open("/proc/self/maps") if "liboar_core" in ln][0])
    fn = lib.oar_sgemm_route
    fn.restype = ctypes.c_char_p
    fn.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_int64] * 5
    return fn(ta, tb, m, n, k, lda, ldb).decode()


def _check(got, a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-6 * np.sqrt(max(a.shape[-1], 1)) * 4)


def _product(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    if FORCED:
        assert _route(0, 0, m, n, k, k, n) == "oar"
    _check(oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy(), a, b)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6, 7, 11, 12, 13])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 330])
def test_tile_remainders(m, n):
    """Every row count of the last tile (1-6), and columns around the 16-float vectors, the
    64-column tiles and the 256-column blocks."""
    _product(m, 37, n, m * 1000 + n)


@pytest.mark.parametrize("k", [0, 1, 2, 15, 1023, 1024, 1025, 2048, 2500])
def test_k_blocks(k):
    """K up to one block of 1024 (C stored once), and over it (C accumulated in 2-3 blocks of
    equal size); K = 0 gives zeros."""
    _product(13, k, 70, k)


@pytest.mark.parametrize("mkn", [(1024, 1024, 1024), (1031, 1029, 515), (2048, 1100, 640)],
                         ids=lambda s: "x".join(map(str, s)))
def test_large(mkn):
    """The shapes the default route sends to the kernel on an Intel AVX-512 core."""
    _product(*mkn, sum(mkn))


def test_strided_views():
    """A and B as views narrower than their rows (lda > K, ldb > N), rows 4 KiB apart."""
    rng = np.random.default_rng(3)
    big_a = rng.standard_normal((70, 1024)).astype("float32")
    big_b = rng.standard_normal((600, 1024)).astype("float32")
    a = oar.to_tensor(big_a)[:, :600]
    b = oar.to_tensor(big_b)[:, 5:300]
    _check(oar.matmul(a, b).numpy(), big_a[:, :600], big_b[:, 5:300])


def test_batched():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 50, 130)).astype("float32")
    b = rng.standard_normal((130, 200)).astype("float32")
    got = oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy()
    for i in range(3):
        _check(got[i], a[i], b)


def test_two_threads():
    """At 2 threads the pool splits the product into column panels, one call each; their
    widths need not be multiples of the tile's 64 columns."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1030, 1100)).astype("float32")
    b = rng.standard_normal((1100, 1030)).astype("float32")
    before = oar.get_num_threads()
    try:
        oar.set_num_threads(2)
        got = oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy()
    finally:
        oar.set_num_threads(before)
    _check(got, a, b)


def test_non_finite():
    """inf * 0 and NaN reach exactly the outputs they reach in float64 (the zero padding of the
    last tile's columns makes NaN in lanes that are never stored)."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((9, 40)).astype("float32")
    b = rng.standard_normal((40, 70)).astype("float32")
    a[2, 3] = np.inf
    b[3, :] = 0.0
    a[5, 7] = np.nan
    got = oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(got[2]).all() and np.isnan(got[5]).all() and not np.isnan(np.delete(got, [2, 5], 0)).any()
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-4)


def test_linear_and_its_gradient():
    """A Linear layer's forward (x W: untransposed) through the kernel, its backward through
    the transposed products."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((70, 90)).astype("float32")
    w = rng.standard_normal((90, 130)).astype("float32")
    g = rng.standard_normal((70, 130)).astype("float32")
    xt = oar.to_tensor(x, stop_gradient=False)
    wt = oar.to_tensor(w, stop_gradient=False)
    y = oar.matmul(xt, wt)
    (y * oar.to_tensor(g)).sum().backward()
    _check(y.numpy(), x, w)
    _check(xt.grad.numpy(), g, w.T)
    _check(wt.grad.numpy(), x.T, g)


def test_kernel_in_a_child():
    if not AVX512:
        pytest.skip("no AVX-512 on this CPU: the kernel cannot run here")
    r = subprocess.run([sys.executable, "-m", "pytest", os.path.abspath(__file__), "-q", "-o", "addopts=", "-p",
                        "no:cacheprovider", "-k", "not in_a_child"], env={**os.environ, "OAR_SGEMM": "oar"},
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
