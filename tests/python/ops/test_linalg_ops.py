"""matmul (paddle_core/ops/linalg.yaml) against np.matmul: transpose flags, 1-D operands,
batch broadcasting, strided operands, dtypes, gradients and bad inputs."""
import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, OpCase, case_id,
                           check_bad_inputs, check_forward, check_grad, declared_ops, ints, normal,
                           tensor)

MATMUL_TOL = {"float32": (1e-4, 1e-5), "float16": (5e-2, 2e-2), "bfloat16": (2e-1, 5e-2)}


def _np_matmul(x, y, transpose_x=False, transpose_y=False):
    if transpose_x and x.ndim > 1:
        x = np.swapaxes(x, -1, -2)
    if transpose_y and y.ndim > 1:
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y)


# (name, shapes of x and y, transpose_x, transpose_y)
LAYOUTS = [
    ("[mm]", [(3, 4), (4, 5)], False, False),
    ("[tx]", [(4, 3), (4, 5)], True, False),
    ("[ty]", [(3, 4), (5, 4)], False, True),
    ("[tx,ty]", [(4, 3), (5, 4)], True, True),
    ("[vec_mat]", [(4,), (4, 5)], False, False),
    ("[mat_vec]", [(3, 4), (4,)], False, False),
    ("[vec_vec]", [(4,), (4,)], False, False),
    ("[vec_mat,tx]", [(4,), (4, 5)], True, False),  # flags on 1-D operands are ignored
    ("[mat_vec,ty]", [(3, 4), (4,)], False, True),
    ("[vec_vec,tx,ty]", [(4,), (4,)], True, True),
    ("[vec_batch]", [(4,), (2, 4, 3)], False, False),
    ("[batch_vec,tx]", [(2, 4, 3), (4,)], True, False),
    ("[batch]", [(2, 3, 4), (2, 4, 5)], False, False),
    ("[batch_bcast]", [(2, 1, 3, 4), (3, 4, 2)], False, False),
    ("[batch_mat,ty]", [(2, 3, 4), (5, 4)], False, True),
    ("[mat_batch,tx]", [(4, 3), (2, 4, 5)], True, False),
    ("[empty_m]", [(0, 4), (4, 5)], False, False),
    ("[empty_k]", [(3, 0), (0, 5)], False, False),
    ("[empty_batch]", [(0, 3, 4), (4, 2)], False, False),
]


def _case(suffix, shapes, tx, ty, dtypes, **kw):
    return OpCase(
        "matmul" + suffix, lambda x, y, tx=tx, ty=ty: oar.matmul(x, y, tx, ty),
        lambda x, y, tx=tx, ty=ty: _np_matmul(x, y, tx, ty), inputs=[normal(), normal()],
        shapes=[shapes], dtypes=dtypes, tol=MATMUL_TOL, op="matmul",
        grad="empty" not in suffix, **kw)


CASES = [_case(s, shp, tx, ty, FLOAT_DTYPES + NARROW_DTYPES) for s, shp, tx, ty in LAYOUTS]
CASES += [
    OpCase("matmul[int]", oar.matmul, np.matmul, inputs=[ints(-5, 5), ints(-5, 5)],
           shapes=[[(3, 4), (4, 2)], [(2, 3, 4), (4,)]], dtypes=INT_DTYPES, grad=False),
    OpCase("matmul[bad]", oar.matmul, np.matmul, dtypes=[], op="matmul", bad_inputs=[
        (lambda: (tensor(np.ones((2, 3))), tensor(np.ones((2, 3)))), ValueError,
         "inner dimensions do not match: x shape [2, 3] and y shape [2, 3]"),
        (lambda: (tensor(np.ones(3)), tensor(np.ones(4))), ValueError, "K=3 vs 4"),
        (lambda: (tensor(np.ones((2, 3, 4))), tensor(np.ones((3, 4, 5)))), ValueError,
         "cannot be broadcast"),
        (lambda: (tensor(np.ones(())), tensor(np.ones(3))), ValueError, "rank >= 1"),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad and c.dtypes], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_every_linalg_op_has_a_case():
    from test_linalg import CASES as DECOMPOSITION_CASES  # decompositions and solvers
    from test_linalg_more import CASES as LU_CASES  # lu and its gradient kernel
    names = {c.name.split("[")[0] for c in CASES + DECOMPOSITION_CASES + LU_CASES}
    assert declared_ops("linalg.yaml") - names == set()


def test_transposed_flag_shape_message():
    with pytest.raises(ValueError, match=r"x shape \[3, 4\] \(transposed\)"):
        oar.matmul(tensor(np.ones((3, 4))), tensor(np.ones((4, 5))), transpose_x=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_strided_and_transposed_views(dtype):
    # Operands that are views (transposed, sliced, expanded) give the same results.
    rng = np.random.default_rng(3)
    x, y = tensor(rng.standard_normal((2, 5, 6)), dtype), tensor(rng.standard_normal((6, 4)), dtype)
    z = tensor(rng.standard_normal((5, 4)), dtype)
    xr, yr, zr = (t.numpy().astype(np.float64) for t in (x, y, z))
    atol, rtol = MATMUL_TOL.get(dtype, (1e-10, 1e-10))
    checks = [
        (x.transpose([0, 2, 1]), z, xr.transpose(0, 2, 1) @ zr),  # transposed storage
        (z.T, x, zr.T @ xr),
        (oar._C.ops.strided_slice_view(x, [2], [0], [6], [2]),  # columns 0, 2, 4
         oar._C.ops.strided_slice_view(y, [0], [1], [6], [2]), xr[:, :, ::2] @ yr[1::2]),
        (x, oar.expand(y, [2, 6, 4]), xr @ yr),  # a batch dim with stride 0
    ]
    for a, b, ref in checks:
        assert not (a.is_contiguous() and b.is_contiguous())
        np.testing.assert_allclose(oar.matmul(a, b).numpy().astype(np.float64), ref,
                                   atol=atol * 10, rtol=rtol * 10)


def test_matmul_operator_and_promotion():
    x, y = tensor([[1.0, 2.0]], "float32"), tensor([[3.0], [4.0]], "float64")
    out = x @ y
    assert out.dtype.name == "float64"
    assert out.tolist() == [[11.0]]
    out2 = tensor([[1, 2]], "int32") @ tensor([[3.0], [4.0]], "float32")
    assert out2.dtype.name == "float32" and out2.item() == 11.0


def test_matmul_grad_broadcast_batch():
    # y is broadcast over the batch: its gradient sums over it.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 5))
    x, y = tensor(a, "float64", False), tensor(b, "float64", False)
    oar.matmul(x, y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.einsum("bik,bij->kj", a, np.ones((3, 2, 5))))
    np.testing.assert_allclose(x.grad.numpy(), np.ones((3, 2, 5)) @ b.T)


def test_large_matmul_matches_numpy():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((65, 130)), rng.standard_normal((130, 33))
    np.testing.assert_allclose(oar.matmul(tensor(a, "float64"), tensor(b, "float64")).numpy(),
                               a @ b, rtol=1e-12, atol=1e-12)
    out32 = oar.matmul(tensor(a, "float32"), tensor(b, "float32")).numpy()
    np.testing.assert_allclose(out32, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4,
                               atol=1e-4)
