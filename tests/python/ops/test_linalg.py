"""oar.linalg against numpy.linalg in float64: decompositions and solvers (batched,
0-size), their gradients by central differences (through sign-invariant functions of
U/V for svd/eigh), the composite functions (norms, pinv, lstsq, einsum...) and bad
inputs (non-square, singular, not positive definite, shape mismatch, wrong dtype)."""
import math

import numpy as np
import pytest

import oar
from op_test_utils import (Gen, OpCase, case_id, check_bad_inputs, check_forward, check_grad,
                           normal, tensor)

L = oar.linalg
TOL = {"float32": (2e-4, 2e-4), "float64": (1e-9, 1e-9)}


def well_conditioned(shape=None):
    """Random matrices [*, n, n] plus 3 I: far from singular."""
    def f(r, s):
        return r.standard_normal(s) + (3 * np.eye(s[-1]) if len(s) >= 2 else 0)
    return Gen(f, shape)


def spd(x):
    """A symmetric positive definite matrix from any square x (differentiable)."""
    n = x.shape[-1]
    return oar.matmul(x, x, False, True) + oar.eye(n, n, x.dtype) * float(n)


def np_spd(x):
    n = x.shape[-1]
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def sym(x):
    return (x + x.mT) * 0.5


def np_sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2


def cat(*ts):
    return oar.concat([t.reshape([-1]) for t in ts])


def np_cat(*arrs):
    return np.concatenate([np.asarray(a).reshape(-1) for a in arrs])


def np_slogdet(x):
    s, l = np.linalg.slogdet(x)
    return np.stack([s, l])


def np_cross(x, y, axis):
    return np.cross(x, y, axis=axis)


MAT = [[(3, 3)], [(2, 4, 4)], [(0, 3, 3)], [(2, 0, 0)]]
SQ_BAD = [(lambda: (tensor(np.ones((2, 3)), "float64"),), ValueError, "square"),
          (lambda: (tensor(np.ones(3), "float64"),), ValueError, "rank"),
          (lambda: (tensor(np.ones((2, 2)), "int64"),), TypeError, "float32 or float64")]

CASES = [
    OpCase("inv", L.inv, np.linalg.inv, inputs=[well_conditioned()], shapes=MAT, tol=TOL,
           bad_inputs=SQ_BAD + [(lambda: (tensor([[1.0, 2.0], [2.0, 4.0]], "float64"),),
                                 ValueError, "singular")]),
    OpCase("det", L.det, np.linalg.det, inputs=[well_conditioned()], shapes=MAT, tol=TOL,
           bad_inputs=SQ_BAD),
    OpCase("slogdet", L.slogdet, np_slogdet, inputs=[normal()], shapes=MAT[:3], tol=TOL,
           bad_inputs=SQ_BAD),
    OpCase("solve", L.solve, np.linalg.solve, inputs=[well_conditioned(), normal()], tol=TOL,
           shapes=[[(3, 3), (3, 2)], [(2, 3, 3), (2, 3, 1)], [(2, 3, 3), (3, 4)],
                   [(0, 2, 2), (0, 2, 3)], [(3, 3), (3, 0)]],
           bad_inputs=[(lambda: (tensor(np.eye(3), "float64"), tensor(np.ones((2, 1)), "float64")),
                        ValueError, "do not match"),
                       (lambda: (tensor([[1.0, 1.0], [1.0, 1.0]], "float64"),
                                 tensor(np.ones((2, 1)), "float64")), ValueError, "singular"),
                       (lambda: (tensor(np.eye(2), "float64"), tensor(np.ones((2, 1)), "float32")),
                        TypeError, "dtype")]),
    OpCase("solve[vec]", L.solve, np.linalg.solve, inputs=[well_conditioned((3, 3)), normal((3,))],
           tol=TOL, op="solve"),
    OpCase("solve[right]", lambda a, b: L.solve(a, b, left=False),
           lambda a, b: np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2),
           inputs=[well_conditioned((3, 3)), normal((2, 3))], tol=TOL, op="solve"),
    OpCase("triangular_solve", lambda a, b: L.triangular_solve(a, b, upper=False),
           lambda a, b: np.linalg.solve(np.tril(a), b),
           inputs=[well_conditioned(), normal()], tol=TOL,
           shapes=[[(3, 3), (3, 2)], [(2, 3, 3), (1, 3, 2)], [(0, 3, 3), (0, 3, 1)]],
           bad_inputs=[(lambda: (tensor(np.eye(3), "float64"), tensor(np.ones((2, 1)), "float64")),
                        ValueError, "do not match"),
                       (lambda: (tensor(np.zeros((2, 2)), "float64"), tensor(np.ones((2, 1)), "float64")),
                        ValueError, "singular")]),
    OpCase("triangular_solve[upper,T,unit]",
           lambda a, b: L.triangular_solve(a, b, upper=True, transpose=True, unitriangular=True),
           lambda a, b: np.linalg.solve((np.triu(a, 1) + np.eye(a.shape[-1])).swapaxes(-1, -2), b),
           inputs=[normal((3, 3)), normal((3, 2))], tol=TOL, op="triangular_solve"),
    OpCase("cholesky", lambda x: L.cholesky(spd(x)), lambda x: np.linalg.cholesky(np_spd(x)),
           inputs=[normal()], shapes=MAT, tol=TOL),
    OpCase("cholesky[raw]", L.cholesky, np.linalg.cholesky,
           inputs=[Gen(lambda r, s: np_spd(r.standard_normal(s)))], shapes=MAT, tol=TOL,
           grad=False, op="cholesky",
           bad_inputs=[(lambda: (tensor([[1.0, 2.0], [2.0, 1.0]], "float64"),), ValueError,
                        "not positive definite")] + SQ_BAD),
    OpCase("cholesky[upper]", lambda x: L.cholesky(spd(x), upper=True),
           lambda x: np.swapaxes(np.linalg.cholesky(np_spd(x)), -1, -2), inputs=[(2, 3, 3)],
           tol=TOL, op="cholesky"),
    OpCase("cholesky_solve", lambda b, x: L.cholesky_solve(b, L.cholesky(spd(x))),
           lambda b, x: np.linalg.solve(np_spd(x), b), inputs=[(3, 2), (3, 3)], tol=TOL,
           op="cholesky"),
    OpCase("cholesky_solve[upper]", lambda b, x: L.cholesky_solve(b, L.cholesky(spd(x), True), True),
           lambda b, x: np.linalg.solve(np_spd(x), b), inputs=[(2, 3, 2), (2, 3, 3)], tol=TOL,
           op="cholesky"),
    OpCase("qr", lambda x: cat(*L.qr(x)), lambda x: np_cat(*np.linalg.qr(x)), inputs=[normal()],
           tol=TOL, shapes=[[(4, 3)], [(2, 3, 3)], [(3, 5)], [(0, 3, 2)]],
           bad_inputs=[(lambda: (tensor(np.ones(3), "float64"),), ValueError, "rank")]),
    OpCase("qr[complete]", lambda x: cat(*L.qr(x, "complete")),
           lambda x: np_cat(*np.linalg.qr(x, "complete")), inputs=[(4, 2)], tol=TOL, grad=False,
           op="qr"),
    OpCase("qr[r]", lambda x: L.qr(x, "r"), lambda x: np.linalg.qr(x, "r"), inputs=[(4, 3)],
           tol=TOL, op="qr"),
    # Signs of singular/eigen vectors are arbitrary: compare u*u and vh*vh.
    OpCase("svd", lambda x: (lambda u, s, vh: cat(s, u * u, vh * vh))(*L.svd(x)),
           lambda x: (lambda u, s, vh: np_cat(s, u * u, vh * vh))(*np.linalg.svd(x, False)),
           inputs=[normal()], tol=TOL, shapes=[[(4, 3)], [(2, 3, 5)], [(3, 3)], [(0, 2, 2)]],
           bad_inputs=[(lambda: (tensor(np.ones((3, 3)), "int32"),), TypeError, "float")]),
    OpCase("svd[full]", lambda x: (lambda u, s, vh: cat(s, u * u, vh * vh))(*L.svd(x, True)),
           lambda x: (lambda u, s, vh: np_cat(s, u * u, vh * vh))(*np.linalg.svd(x, True)),
           inputs=[(4, 2)], tol=TOL, grad=False, op="svd"),
    OpCase("svdvals", L.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), inputs=[(3, 4)],
           tol=TOL),
    OpCase("eigh", lambda x: (lambda w, v: cat(w, v * v))(*L.eigh(sym(x))),
           lambda x: (lambda w, v: np_cat(w, v * v))(*np.linalg.eigh(np_sym(x))), inputs=[normal()],
           tol=TOL, shapes=MAT),
    OpCase("eigh[U]", lambda x: (lambda w, v: cat(w, v * v))(*L.eigh(x, "U")),
           lambda x: (lambda w, v: np_cat(w, v * v))(*np.linalg.eigh(x, "U")), inputs=[(3, 3)],
           tol=TOL, grad=False, op="eigh", bad_inputs=SQ_BAD),
    OpCase("eigvalsh", lambda x: L.eigvalsh(sym(x)), lambda x: np.linalg.eigvalsh(np_sym(x)),
           inputs=[(2, 4, 4)], tol=TOL),
    OpCase("pinv", L.pinv, np.linalg.pinv, inputs=[normal()], tol=TOL,
           shapes=[[(4, 3)], [(2, 3, 5)], [(0, 2, 3)]]),
    OpCase("lstsq", lambda a, b: L.lstsq(a, b)[0], lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           inputs=[(5, 3), (5, 2)], tol=TOL,
           bad_inputs=[(lambda: (tensor(np.ones((3, 2)), "float64"), tensor(np.ones((2, 2)), "float64")),
                        ValueError, "rows")]),
    OpCase("lstsq[residuals]", lambda a, b: L.lstsq(a, b)[1],
           lambda a, b: np.linalg.lstsq(a, b, rcond=None)[1], inputs=[(6, 3), (6, 2)], tol=TOL,
           op="lstsq"),
    OpCase("matrix_power", lambda x: L.matrix_power(x, 5), lambda x: np.linalg.matrix_power(x, 5),
           inputs=[normal()], tol=TOL, shapes=[[(3, 3)], [(2, 2, 2)], [(0, 3, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3)), "float64"),), ValueError, "square")]),
    OpCase("matrix_power[neg]", lambda x: L.matrix_power(x, -2),
           lambda x: np.linalg.matrix_power(x, -2), inputs=[well_conditioned((3, 3))], tol=TOL,
           op="inv"),
    OpCase("matrix_power[0]", lambda x: L.matrix_power(x, 0), lambda x: np.linalg.matrix_power(x, 0),
           inputs=[(2, 3, 3)], grad=False, op="matrix_power"),
    OpCase("vector_norm", lambda x: L.vector_norm(x, 2.0, axis=1),
           lambda x: np.linalg.norm(x, 2, axis=1), inputs=[normal()], tol=TOL,
           shapes=[[(3, 4)], [(0, 4)], [(2, 3, 4)]]),
    OpCase("vector_norm[p=3,all]", lambda x: L.vector_norm(x, 3.0),
           lambda x: np.sum(np.abs(x) ** 3) ** (1 / 3), inputs=[(3, 4)], tol=TOL, op="vector_norm"),
    OpCase("vector_norm[inf]", lambda x: L.vector_norm(x, math.inf, axis=[0, 1], keepdim=True),
           lambda x: np.max(np.abs(x), axis=(0, 1), keepdims=True), inputs=[(3, 4)], tol=TOL,
           op="vector_norm"),
    OpCase("vector_norm[1]", lambda x: L.vector_norm(x, 1, axis=-1),
           lambda x: np.sum(np.abs(x), -1), inputs=[(3, 4)], tol=TOL, op="vector_norm"),
    OpCase("vector_norm[0]", lambda x: L.vector_norm(x, 0, axis=-1),
           lambda x: np.sum(x != 0, -1).astype(float), inputs=[(3, 4)], grad=False,
           op="vector_norm"),
    OpCase("matrix_norm", L.matrix_norm, lambda x: np.linalg.norm(x, "fro", axis=(-2, -1)),
           inputs=[(2, 3, 4)], tol=TOL),
]
for _p in ["nuc", 1, -1, math.inf, -math.inf, 2, -2]:
    CASES.append(OpCase(f"matrix_norm[{_p}]", lambda x, p=_p: L.matrix_norm(x, p),
                        lambda x, p=_p: np.linalg.norm(x, p, axis=(-2, -1)), inputs=[(2, 3, 4)],
                        tol=TOL, op="matrix_norm"))
CASES += [
    OpCase("matrix_norm[keepdim,axis]", lambda x: L.matrix_norm(x, 1, axis=[0, 2], keepdim=True),
           lambda x: np.linalg.norm(x, 1, axis=(0, 2), keepdims=True), inputs=[(2, 3, 4)],
           tol=TOL, op="matrix_norm",
           bad_inputs=[(lambda: (tensor(np.ones(3), "float64"),), ValueError, "rank")]),
    OpCase("norm", lambda x: L.norm(x), lambda x: np.linalg.norm(x.reshape(-1)), inputs=[(3, 4)],
           tol=TOL),
    OpCase("norm[fro,axis]", lambda x: oar.norm(x, "fro", axis=[0, 1]),
           lambda x: np.linalg.norm(x, "fro", axis=(0, 1)), inputs=[(3, 4, 2)], tol=TOL, op="norm"),
    OpCase("cond", L.cond, np.linalg.cond, inputs=[(3, 3)], tol=TOL, grad_tol=(1e-5, 1e-4)),
    OpCase("cond[fro]", lambda x: L.cond(x, "fro"), lambda x: np.linalg.cond(x, "fro"),
           inputs=[well_conditioned((2, 3, 3))], tol=TOL, op="cond",
           bad_inputs=[(lambda: (tensor(np.ones((2, 3)), "float64"),), ValueError, "square")]),
    OpCase("cross", lambda x, y: L.cross(x, y, axis=1), lambda x, y: np_cross(x, y, 1),
           inputs=[(2, 3, 4), (2, 3, 4)], tol=TOL,
           shapes=[[(2, 3, 4), (2, 3, 4)], [(0, 3), (1, 3)], [(1, 3), (2, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 2)), "float64"), tensor(np.ones((2, 2)), "float64")),
                        ValueError, "size 3")]),
    OpCase("cross[default]", oar.cross, lambda x, y: np_cross(x, y, 0), inputs=[(3, 2), (3, 2)],
           tol=TOL, op="cross"),
    OpCase("multi_dot", lambda a, b, c, d: L.multi_dot([a, b, c, d]),
           lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
           inputs=[(4,), (4, 6), (6, 2), (2, 3)], tol=TOL,
           bad_inputs=[(lambda: (tensor(np.ones(3)), tensor(np.ones((2, 2))), tensor(np.ones((2, 2))),
                                 tensor(np.ones((2, 2)))), ValueError, "do not match")]),
    OpCase("bmm", oar.bmm, np.matmul, inputs=[(2, 3, 4), (2, 4, 5)], tol=TOL,
           shapes=[[(2, 3, 4), (2, 4, 5)], [(0, 3, 4), (0, 4, 2)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3, 4))), tensor(np.ones((3, 4, 5)))), ValueError,
                        "do not match"),
                       (lambda: (tensor(np.ones((3, 4))), tensor(np.ones((4, 5)))), ValueError, "3-D")]),
    OpCase("mv", oar.mv, np.matmul, inputs=[(3, 4), (4,)], tol=TOL,
           bad_inputs=[(lambda: (tensor(np.ones((3, 4))), tensor(np.ones(3))), ValueError,
                        "do not match")]),
]
EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(3, 3)]), ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]), ("i,i->", [(5,), (5,)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,bd->ad", [(2, 3, 4), (4, 5), (3, 5)]), ("ijk->kj", [(2, 3, 4)]), ("iij->j", [(3, 3, 2)]),
    ("ij,ij->i", [(3, 4), (3, 4)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk", [(0, 4), (4, 5)]),
]
for _eq, _shapes in EINSUM:
    CASES.append(OpCase(f"einsum[{_eq}]", lambda *xs, eq=_eq: oar.einsum(eq, *xs),
                        lambda *xs, eq=_eq: np.einsum(eq, *xs), inputs=[normal()] * len(_shapes),
                        shapes=[_shapes], tol=TOL, op="einsum"))
CASES.append(OpCase("einsum[bad]", lambda x, y: oar.einsum("ij,jk->ik", x, y),
                    lambda x, y: x @ y, inputs=[(2, 3), (3, 2)], tol=TOL, op="einsum",
                    bad_inputs=[(lambda: (tensor(np.ones((2, 3))), tensor(np.ones((4, 2)))),
                                 ValueError, "label 'j' has sizes 3 and 4")]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_singular_det_and_slogdet():
    x = tensor([[1.0, 2.0], [2.0, 4.0]], "float64")
    assert L.det(x).item() == 0.0
    s = L.slogdet(x).numpy()
    assert s[0] == 0.0 and s[1] == -np.inf


def test_matrix_rank():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))
    np.testing.assert_array_equal(L.matrix_rank(oar.to_tensor(a)).numpy(), [2, 2, 2])
    np.testing.assert_array_equal(L.matrix_rank(oar.to_tensor(np.eye(4)), tol=2.0).numpy(), 0)
    h = a[0] @ a[0].T
    assert L.matrix_rank(oar.to_tensor(h), hermitian=True).item() == np.linalg.matrix_rank(h)


def test_lstsq_outputs():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    sol, res, rank, sv = L.lstsq(oar.to_tensor(a), oar.to_tensor(b), driver="gelsd")
    ref = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(sol.numpy(), ref[0], atol=1e-10)
    np.testing.assert_allclose(res.numpy(), ref[1], atol=1e-10)
    assert rank.item() == ref[2]
    np.testing.assert_allclose(sv.numpy(), ref[3], atol=1e-10)
    with pytest.raises(ValueError, match="lstsq: driver"):
        L.lstsq(oar.to_tensor(a), oar.to_tensor(b), driver="bogus")


def test_decompositions_reconstruct_float32():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 5, 3)).astype(np.float32)
    u, s, vh = L.svd(oar.to_tensor(a))
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-5)
    q, r = L.qr(oar.to_tensor(a))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-5)
    assert q.dtype.name == "float32"
    w, v = L.eigh(oar.to_tensor(a @ np.swapaxes(a, -1, -2)))
    np.testing.assert_allclose(v.numpy() @ (w.numpy()[..., None] * np.swapaxes(v.numpy(), -1, -2)),
                               a @ np.swapaxes(a, -1, -2), atol=1e-4)


def test_slogdet_and_inv_second_order():
    # Backward formulas are op compositions: their gradients have gradients.
    x = oar.to_tensor(np.eye(3) * 2 + 0.1, stop_gradient=False)
    (g,) = oar.grad([L.slogdet(x)[1].sum()], [x], create_graph=True)
    (gg,) = oar.grad([g.sum()], [x])
    xn = x.numpy()
    ref = lambda m: np.linalg.inv(m).T.sum()  # noqa: E731
    num = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            d = np.zeros((3, 3))
            d[i, j] = 1e-6
            num[i, j] = (ref(xn + d) - ref(xn - d)) / 2e-6
    np.testing.assert_allclose(gg.numpy(), num, atol=1e-6)


def test_top_level_and_methods():
    x = oar.to_tensor(np.eye(3) * 2)
    np.testing.assert_allclose(oar.inverse(x).numpy(), np.eye(3) / 2)
    np.testing.assert_allclose(x.inverse().numpy(), np.eye(3) / 2)
    np.testing.assert_allclose(x.cholesky().numpy(), np.eye(3) * np.sqrt(2))
    assert oar.linalg.inv is L.inv and callable(x.norm)


LINALG_NAMES = ["matmul", "bmm", "mv", "einsum", "inv", "det", "slogdet", "solve",
                "triangular_solve", "cholesky", "cholesky_solve", "qr", "svd", "svdvals", "eigh",
                "eigvalsh", "lstsq", "pinv", "matrix_power", "matrix_rank", "norm", "vector_norm",
                "matrix_norm", "cond", "cross", "multi_dot"]


@pytest.mark.parametrize("name", LINALG_NAMES)
def test_linalg_name_exists(name):
    assert callable(getattr(oar.linalg, name)), f"oar.linalg.{name} is missing"


@pytest.mark.parametrize("name", ["bmm", "mv", "einsum", "inverse", "cholesky", "cross", "norm"])
def test_top_level_alias_exists(name):
    assert callable(getattr(oar, name)), f"oar.{name} is missing"
