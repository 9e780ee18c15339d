"""linalg.lu / lu_unpack / lu_solve, matrix_exp, householder_product (python/oar/_linalg_more.py)
against NumPy float64 references (0-size and batched shapes), gradients by central
differences, bad inputs."""
import math

import numpy as np
import pytest

import oar
from op_test_utils import OpCase, case_id, check_case, tensor

L = oar.linalg


def np_lu(a):
    """Partial-pivoting LU (LAPACK getrf's choices): (LU, 1-based pivots)."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape[-2:]
    flat = a.reshape(-1, m, n)
    pivs = np.zeros((flat.shape[0], min(m, n)), np.int64)
    for b, x in enumerate(flat):
        for k in range(min(m, n)):
            p = k + int(np.argmax(np.abs(x[k:, k])))
            pivs[b, k] = p + 1
            x[[k, p]] = x[[p, k]]
            if x[k, k] != 0:
                x[k + 1:, k] /= x[k, k]
            x[k + 1:, k + 1:] -= np.outer(x[k + 1:, k], x[k, k + 1:])
    return flat.reshape(a.shape), pivs.reshape(a.shape[:-2] + (min(m, n),))


def np_expm(a):
    if a.size == 0:
        return a.copy()
    s = max(0, math.ceil(math.log2(max(np.abs(a).sum(-1).max(), 1e-300) / 0.5)))
    b = a / 2 ** s
    out, term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy(), None
    term = out.copy()
    for k in range(1, 30):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def np_householder(x, tau):
    m, n = x.shape[-2:]
    q = np.broadcast_to(np.eye(m), x.shape[:-2] + (m, m)).copy()
    for i in range(tau.shape[-1]):
        v = np.zeros(x.shape[:-2] + (m,))
        v[..., i] = 1
        v[..., i + 1:] = x[..., i + 1:, i]
        q = q - tau[..., i, None, None] * (q @ v[..., :, None]) @ v[..., None, :]
    return q[..., :n]


def _lu_grad_oar(x, w):
    x = x.detach()
    x.stop_gradient = False
    return oar.grad([(L.lu(x)[0] * w).sum()], [x])[0]


def _lu_grad_np(x, w, eps=1e-6):
    """The gradient of sum(LU * w) by central differences of np_lu."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = ((np_lu(hi)[0] - np_lu(lo)[0]) * w).sum() / (2 * eps)
    return g


def _lu_grad_args(piv, g_shape=(3, 3)):
    return (tensor(np.eye(3), "float64"), oar.to_tensor(piv, "int32"), tensor(np.ones(g_shape), "float64"))


SQ = [[(4, 4)], [(2, 3, 3)], [(0, 2, 2)]]
CASES = [
    OpCase("lu", lambda x: L.lu(x)[0], lambda x: np_lu(x)[0], inputs=[(4, 4)],
           shapes=SQ + [[(5, 3)], [(3, 5)]],
           bad_inputs=[((tensor(np.ones(3)),), ValueError, "rank >= 2"),
                       ((oar.to_tensor(np.ones((2, 2), np.int64)),), TypeError, "float")]),
    # the gradient kernel's three shapes: square (one larger, so that rows are interchanged),
    # tall and wide, batched
    OpCase("lu[grad]", lambda x: L.lu(x)[0], lambda x: np_lu(x)[0], inputs=[(4, 4)],
           shapes=[[(7, 7)]], grad_shapes=[[(7, 7)], [(5, 3)], [(3, 5)], [(2, 6, 4)], [(2, 4, 6)]],
           op="lu"),
    # lu_grad, the gradient kernel, against differences of the NumPy factorization; called
    # directly, it checks its pivots and the gradient's shape
    OpCase("lu_grad", lambda *a: oar._C.ops._lu_grad(*a) if len(a) == 3 else _lu_grad_oar(*a), _lu_grad_np, inputs=[(5, 5), (5, 5)], dtypes=["float64"],
           grad=False, shapes=[[(5, 5), (5, 5)], [(6, 4), (6, 4)], [(4, 6), (4, 6)]],
           tol={"float64": (1e-7, 1e-6)},
           bad_inputs=[(lambda: _lu_grad_args([4, 2, 3]), ValueError, "pivot 4 of matrix 0"),
                       (lambda: _lu_grad_args([0, 2, 3]), ValueError, "pivot 0 of matrix 0"),
                       (lambda: _lu_grad_args([[1, 2, 3]]), ValueError, "pivots must be int32 of shape [3]"),
                       (lambda: _lu_grad_args([1, 2, 3], (3, 2)), ValueError, "must match lu")]),
    OpCase("lu_solve", lambda b, a, *r, **kw: L.lu_solve(b, a, *r, **kw) if r else L.lu_solve(b, *L.lu(a)), lambda b, a: np.linalg.solve(a, b),
           inputs=[(4, 2), (4, 4)], shapes=[[(4, 2), (4, 4)], [(2, 3, 1), (2, 3, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((3, 1))), *L.lu(tensor(np.eye(3)))), ValueError,
                        "trans", {"trans": "X"})]),
    OpCase("lu_solve_T", lambda b, a: L.lu_solve(b, *L.lu(a), trans="T"),
           lambda b, a: np.linalg.solve(np.swapaxes(a, -1, -2), b), inputs=[(3, 2), (3, 3)],
           op="lu_solve"),
    OpCase("matrix_exp", L.matrix_exp, np_expm, inputs=[(3, 3)],
           shapes=[[(3, 3)], [(2, 4, 4)], [(0, 2, 2)], [(1, 1)]],
           bad_inputs=[((tensor(np.ones((2, 3))),), ValueError, "square")]),
    OpCase("householder_product", L.householder_product, np_householder,
           inputs=[(5, 3), (3,)], shapes=[[(5, 3), (3,)], [(2, 4, 4), (2, 2)], [(3, 2), (0,)]],
           bad_inputs=[((tensor(np.ones((2, 3))), tensor(np.ones(2))), ValueError, "m >= n")]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_lu_pivots_and_unpack_reconstruct(shape):
    a = np.random.default_rng(4).standard_normal(shape)
    lu_t, piv, info = L.lu(oar.to_tensor(a), get_infos=True)
    ref_lu, ref_piv = np_lu(a)
    np.testing.assert_array_equal(piv.numpy(), ref_piv)
    assert piv.dtype.name == "int32" and info.dtype.name == "int32" and not info.numpy().any()
    P, Lm, U = L.lu_unpack(lu_t, piv)
    np.testing.assert_allclose((P @ Lm @ U).numpy(), a, rtol=1e-12, atol=1e-12)
    assert oar.to_tensor(a).lu()[0].shape == list(shape)


def test_lu_singular_info_and_matrix_exp_examples():
    _, _, info = L.lu(oar.to_tensor([[1.0, 2.0], [2.0, 4.0]]), get_infos=True)
    assert int(info) == 2
    r = L.matrix_exp(oar.to_tensor([[0.0, math.pi / 3], [-math.pi / 3, 0.0]], "float64")).numpy()
    np.testing.assert_allclose(r, [[0.5, math.sqrt(3) / 2], [-math.sqrt(3) / 2, 0.5]], atol=1e-14)
    big = np.diag([5.0, -3.0, 20.0])
    np.testing.assert_allclose(L.matrix_exp(oar.to_tensor(big)).numpy(), np.diag(np.exp([5.0, -3.0, 20.0])),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="lu_unpack: pivots must be 1-based"):
        L.lu_unpack(oar.to_tensor(np.eye(2)), oar.to_tensor([0, 1], "int32"))
    with pytest.raises(ValueError, match="lu: pivot=False"):
        L.lu(oar.to_tensor(np.eye(2)), pivot=False)
