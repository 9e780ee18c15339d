"""matmul on strided and transposed views (issue 17 part 5): the views that hand-written
attention makes (q.transpose([0, 2, 1, 3]) of a [B, L, H, D] projection, k.transpose(-1, -2),
slices with a leading dimension larger than the row) are read in place by the kernel, with
any batch strides. Checked against float64 NumPy for every shape class (odd sizes,
broadcast batch dims, 0-size, rank 2/3/4), forward and gradients, and that the result does
not depend on whether the operand was copied first."""
import numpy as np
import pytest

import oar

RNG = np.random.default_rng(0)


def _t(a, grad=False):
    return oar.to_tensor(a, stop_gradient=not grad)


def _check(x_view, y_view, xn, yn, tx=False, ty=False, dtype="float64"):
    out = oar.matmul(x_view, y_view, transpose_x=tx, transpose_y=ty)
    a = np.swapaxes(xn, -1, -2) if tx else xn
    b = np.swapaxes(yn, -1, -2) if ty else yn
    ref = np.matmul(a, b)
    tol = 1e-12 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)
    # the same product of contiguous copies
    same = oar.matmul(x_view.contiguous(), y_view.contiguous(), transpose_x=tx, transpose_y=ty)
    np.testing.assert_allclose(out.numpy(), same.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("b,l,h,d", [(2, 7, 3, 5), (1, 1, 1, 1), (3, 16, 4, 8), (2, 0, 2, 3), (2, 5, 2, 0)])
def test_attention_views(dtype, b, l, h, d):
    q = RNG.standard_normal((b, l, h, d)).astype(dtype)
    k = RNG.standard_normal((b, l, h, d)).astype(dtype)
    qv = _t(q).transpose([0, 2, 1, 3])  # [B, H, L, D] view, batch strides (L*H*D, D)
    kv = _t(k).transpose([0, 2, 1, 3])
    qn, kn = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    _check(qv, kv, qn, kn, ty=True, dtype=dtype)                          # q k^T via the flag
    _check(qv, kv.transpose([0, 1, 3, 2]), qn, kn.transpose(0, 1, 3, 2), dtype=dtype)  # k.transpose(-1, -2)
    p = RNG.standard_normal((b, h, l, l)).astype(dtype)
    _check(_t(p), kv, p, kn, dtype=dtype)                                 # softmax(s) @ v
    _check(kv, _t(p), kn, p, tx=True, dtype=dtype)                        # the backward's v^T-like product


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sliced_rows_and_broadcast_batches(dtype):
    big = RNG.standard_normal((3, 9, 11)).astype(dtype)
    x = _t(big)[:, 1:6, 2:9]   # leading dimension 11 > 7 columns
    w = RNG.standard_normal((7, 4)).astype(dtype)
    _check(x, _t(w), big[:, 1:6, 2:9], w, dtype=dtype)
    wb = RNG.standard_normal((1, 4, 7)).astype(dtype)
    _check(x, _t(wb), big[:, 1:6, 2:9], wb, ty=True, dtype=dtype)
    # an expanded (stride-0) batch dim
    e = _t(w).unsqueeze(0).expand([3, 7, 4])
    _check(x, e, big[:, 1:6, 2:9], np.broadcast_to(w, (3, 7, 4)), dtype=dtype)
    # every other column (no unit stride in either dim): copied, same numbers
    w2 = RNG.standard_normal((6, 2)).astype(dtype)
    _check(_t(big)[:, :, ::2], _t(w2), big[:, :, ::2], w2, dtype=dtype)


def test_gradients_through_transposed_views():
    q = RNG.standard_normal((2, 5, 3, 4))
    k = RNG.standard_normal((2, 5, 3, 4))
    qt, kt = _t(q, True), _t(k, True)
    s = oar.matmul(qt.transpose([0, 2, 1, 3]), kt.transpose([0, 2, 1, 3]), transpose_y=True)
    cot = RNG.standard_normal(s.shape)
    (s * _t(cot)).sum().backward()
    qn, kn = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    gq = np.matmul(cot, kn).transpose(0, 2, 1, 3)
    gk = np.matmul(np.swapaxes(cot, -1, -2), qn).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(qt.grad.numpy(), gq, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kt.grad.numpy(), gk, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_times_weight_is_one_gemm_only_for_uniform_rows(dtype):
    """A batch-less weight folds the batch into the rows only when the rows of op(x) lie
    evenly across the batch; the other layouts take one product per matrix."""
    base = RNG.standard_normal((2, 4, 4)).astype(dtype)
    w = RNG.standard_normal((4, 5)).astype(dtype)
    w3 = RNG.standard_normal((3, 5)).astype(dtype)
    _check(_t(base)[:, :, :3], _t(w3), base[:, :, :3], w3, dtype=dtype)          # rows 4 apart, batch 16: folds
    xt = _t(base).transpose([0, 2, 1])[:, :, :3]                                  # [2, 4, 3], strides (16, 1, 4)
    xn = base.transpose(0, 2, 1)[:, :, :3]
    _check(xt, _t(w3), xn, w3, dtype=dtype)                                        # column-major: no fold
    # transpose_x: op(x) has 3 rows 4 apart and the batch 16 apart (not 12): no fold
    _check(xt, _t(w), xn, w, tx=True, dtype=dtype)
    x2 = _t(base).transpose([0, 2, 1])                                             # op(x) rows 4 apart, batch 16
    _check(x2, _t(w), base.transpose(0, 2, 1), w, tx=True, dtype=dtype)
    wt = np.ascontiguousarray(w.T)
    _check(_t(base), _t(wt), base, wt, ty=True, dtype=dtype)                        # the weight transposed
