"""Note [Matmul output layout] (docs/notes/cinn.md): under to_static(backend='CINN') a
batched product followed by a transpose that keeps its columns innermost is one step
writing the transposed layout (cinn_matmul_layout), equal to float64 NumPy for odd,
broadcast, transposed, strided and empty shapes; and the attention backward's dQ, dK, dV
come out of such steps."""

import numpy as np
import pytest

import oar

CINN_NVRTC = False  # no fused groups here


def _run(shapes, tx, ty, perm, dtype, strided_x=False):
    rng = np.random.default_rng(len(perm) * 7 + int(tx) * 2 + int(ty))
    xs, ys = shapes
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)

    def f(a, b):
        if strided_x:
            a = a.transpose([*range(a.ndim - 2), a.ndim - 1, a.ndim - 2])
        p = oar.matmul(a, b, transpose_x=tx, transpose_y=ty)
        t = p.transpose(perm)
        return t.reshape([-1, t.shape[-1] * t.shape[-2]]) if t.shape[-2] > 0 else t * 1.0

    xin = np.ascontiguousarray(np.swapaxes(x, -1, -2)) if strided_x else x
    fn = oar.jit.to_static(f, backend="CINN")
    got = fn(oar.to_tensor(xin), oar.to_tensor(y)).numpy()
    a = x.astype("float64")
    b = y.astype("float64")
    want = np.matmul(np.swapaxes(a, -1, -2) if tx else a, np.swapaxes(b, -1, -2) if ty else b).transpose(perm)
    want = want.reshape(got.shape)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    prog = str(fn.concrete_programs[-1].executed_program)
    return prog


CASES = [
    # (x shape, y shape), transpose_x, transpose_y, perm
    (((2, 3, 5, 4), (2, 3, 4, 6)), False, False, [0, 2, 1, 3]),
    (((2, 3, 5, 4), (2, 3, 6, 4)), False, True, [0, 2, 1, 3]),
    (((2, 3, 4, 5), (2, 3, 4, 7)), True, False, [0, 2, 1, 3]),
    (((3, 7, 5), (1, 5, 9)), False, False, [1, 0, 2]),
    (((4, 17, 13), (13, 11)), False, False, [1, 0, 2]),
    (((2, 1, 5, 4), (1, 3, 4, 6)), False, False, [2, 1, 0, 3]),
    (((2, 3, 5, 0), (2, 3, 0, 6)), False, False, [0, 2, 1, 3]),
    (((2, 3, 0, 4), (2, 3, 4, 6)), False, False, [0, 2, 1, 3]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes,tx,ty,perm", CASES)
def test_transposed_product_matches_numpy(shapes, tx, ty, perm, dtype):
    prog = _run(shapes, tx, ty, perm, dtype)
    assert "cinn_matmul_" in prog and '"pd_op.transpose"' not in prog, prog


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_strided_operand(dtype):
    prog = _run(((2, 3, 5, 4), (2, 3, 4, 6)), False, False, [0, 2, 1, 3], dtype, strided_x=True)
    assert "cinn_matmul_" in prog, prog


def test_a_transpose_that_moves_the_columns_stays():
    prog = _run(((2, 3, 5, 4), (2, 3, 4, 6)), False, False, [0, 1, 3, 2], "float32")
    assert "cinn_matmul_" not in prog and '"pd_op.transpose"' in prog, prog


def test_the_attention_backward_writes_its_gradients_transposed():
    oar.seed(0)
    net = oar.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu")
    fn = oar.jit.to_static(net, backend="CINN")
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 6, 32)).astype("float32"))
    fn(x).mean().backward()
    cp = fn.forward.concrete_programs[-1] if hasattr(fn, "forward") else fn.concrete_programs[-1]
    bwd = str(cp.executed_backward_program)
    # dQ, dK and dV: [b, h, L, d] products read as [b, L, h, d]
    assert bwd.count("cinn_matmul_") == 3, bwd
