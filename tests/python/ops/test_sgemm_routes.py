"""float32 GEMMs take OpenBLAS or oneDNN's sgemm by shape (phi_kernels/cpu/sgemm.cc):
matmul and fused_linear give the float64 NumPy product on every route: small products (oneDNN), every dim >= 384, a deep and wide B, an
untransposed B with rows a multiple of 512 floats apart (8..1024 rows of A, and just
outside that range), a transposed A with lda a multiple of 512 (K >= 256, N >= 64, and just
outside), transposed operands and views with a larger leading dimension."""
import numpy as np
import oar
import pytest

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
