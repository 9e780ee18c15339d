"""paddle.sparse's functions against float64 NumPy / scipy.sparse references on random sparse
inputs (COO and CSR, 0-size included), finite-difference gradients through the values, and
bad inputs naming the function."""
import numpy as np
import pytest
import scipy.sparse as sps

import oar
from sparse_test_utils import RNG, check_values_grad, random_sparse, t

S = oar.sparse

UNARY = {"sin": np.sin, "tan": np.tan, "asin": np.arcsin, "atan": np.arctan, "sinh": np.sinh,
         "tanh": np.tanh, "asinh": np.arcsinh, "atanh": np.arctanh, "sqrt": np.sqrt,
         "square": np.square, "log1p": np.log1p, "abs": np.abs, "neg": np.negative,
         "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "expm1": np.expm1}
FORMATS = ["coo", "csr"]


def sparse_of(a, fmt, sparse_dim=None):
    x = t(a)
    return x.to_sparse_csr() if fmt == "csr" else x.to_sparse_coo(sparse_dim)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_keeps_pattern_and_matches_numpy(name, fmt):
    a = random_sparse((4, 5)) * 0.5  # inside asin/atanh's domain
    out = getattr(S, name)(sparse_of(a, fmt))
    with np.errstate(invalid="ignore"):
        ref = np.where(a != 0, UNARY[name](np.where(a != 0, a, 0.0)), 0.0)
    np.testing.assert_allclose(out.to_dense().numpy(), ref, rtol=1e-12, atol=1e-12)
    assert out.nnz() == int((a != 0).sum()) and out.is_sparse_csr() == (fmt == "csr")


@pytest.mark.parametrize("name", ["sin", "tanh", "sqrt", "square", "atan", "expm1"])
def test_unary_gradients(name):
    idx = np.array([[0, 1, 3], [2, 0, 1]])
    vals = RNG.uniform(0.2, 0.8, 3)
    check_values_grad(lambda v: getattr(S, name)(S.sparse_coo_tensor(idx, v, [4, 3],
                                                                     stop_gradient=False)), vals)


def test_unary_on_empty_and_dense_dims():
    empty = t(np.zeros((0, 3))).to_sparse_coo(1)
    assert S.sin(empty).nnz() == 0 and list(S.sin(empty).shape) == [0, 3]
    a = random_sparse((3, 2, 4), sparse_dim=1)
    np.testing.assert_allclose(S.tanh(t(a).to_sparse_coo(1)).to_dense().numpy(), np.tanh(a))


def test_pow_cast_isnan():
    a = random_sparse((3, 4))
    sp = t(a).to_sparse_coo(2)
    np.testing.assert_allclose(S.pow(sp, 3).to_dense().numpy(), a ** 3, rtol=1e-12)
    c = S.cast(sp, "int32", "float32")
    assert c.indices().dtype == oar.int32 and c.dtype == oar.float32
    b = a.copy()
    b[b > 0.5] = np.nan
    nan = S.isnan(t(b).to_sparse_coo(2))
    assert nan.dtype == oar.bool
    np.testing.assert_array_equal(nan.to_dense().numpy(), np.isnan(b))
    with pytest.raises(TypeError, match="pow: factor"):
        S.pow(sp, t([2.0]))
    with pytest.raises(TypeError, match="cast: index_dtype"):
        S.cast(sp, "float32")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("op, ref", [("add", np.add), ("subtract", np.subtract),
                                     ("multiply", np.multiply)])
def test_binary_against_numpy(op, ref, fmt):
    a, b = random_sparse((4, 6)), random_sparse((4, 6))
    out = getattr(S, op)(sparse_of(a, fmt), sparse_of(b, fmt))
    assert out.is_sparse_csr() == (fmt == "csr")
    np.testing.assert_allclose(out.to_dense().numpy(), ref(a, b), atol=1e-12)
    if op == "multiply":
        assert out.nnz() == int(((a != 0) & (b != 0)).sum())
    else:
        assert out.nnz() == int(((a != 0) | (b != 0)).sum())


def test_binary_with_dense_dims_and_gradients():
    a, b = random_sparse((3, 4, 2), sparse_dim=2), random_sparse((3, 4, 2), sparse_dim=2)
    np.testing.assert_allclose(S.add(t(a).to_sparse_coo(2), t(b).to_sparse_coo(2)).to_dense().numpy(), a + b)
    y = t(b).to_sparse_coo(2)
    idx = t(a).to_sparse_coo(2).indices().numpy()
    vals = t(a).to_sparse_coo(2).values().numpy()
    for op in (S.add, S.subtract, S.multiply):
        check_values_grad(lambda v: op(S.sparse_coo_tensor(idx, v, [3, 4, 2], stop_gradient=False), y),
                          vals)


def test_divide_stores_every_element():
    a, b = random_sparse((3, 4)), random_sparse((3, 4))
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = a / b
    out = S.divide(t(a).to_sparse_csr(), t(b).to_sparse_csr())
    assert out.nnz() == 12
    np.testing.assert_allclose(out.to_dense().numpy(), ref)
    np.testing.assert_allclose(S.divide(t(a).to_sparse_coo(2), 4.0).to_dense().numpy(), a / 4)
    np.testing.assert_allclose(S.multiply(t(a).to_sparse_coo(2), 3).to_dense().numpy(), a * 3)


def test_binary_bad_inputs():
    x = t(random_sparse((2, 3))).to_sparse_coo(2)
    with pytest.raises(ValueError, match=r"add: x and y must have the same shape, got \[2, 3\] and \[3, 2\]"):
        S.add(x, t(random_sparse((3, 2))).to_sparse_coo(2))
    with pytest.raises(TypeError, match="add: x and y must have the same format"):
        S.add(x, t(random_sparse((2, 3))).to_sparse_csr())
    with pytest.raises(TypeError, match="multiply: x must be a sparse tensor"):
        S.multiply(t([1.0]), x)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 3), (0, 5, 3), (4, 0, 3)])
def test_matmul_against_scipy(fmt, shape):
    a = random_sparse(shape[:-1])
    y = RNG.standard_normal(shape[:-3] + shape[-2:])
    out = S.matmul(sparse_of(a, fmt), t(y))
    ref = a @ y
    if len(shape) == 3 and a.size:
        ref = sps.csr_matrix(a) @ y
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


def test_matmul_gradients_reach_values_and_dense():
    a = random_sparse((4, 5))
    coo = t(a).to_sparse_coo(2)
    idx, vals = coo.indices().numpy(), coo.values().numpy()
    y = RNG.standard_normal((5, 3))
    check_values_grad(lambda v: S.matmul(S.sparse_coo_tensor(idx, v, [4, 5], stop_gradient=False), t(y)), vals)
    check_values_grad(lambda yv: S.matmul(coo, yv), y)


def test_sparse_times_sparse_mv_addmm():
    a, b = random_sparse((4, 5)), random_sparse((5, 3))
    out = S.matmul(t(a).to_sparse_csr(), t(b).to_sparse_csr())
    assert out.is_sparse_csr()
    np.testing.assert_allclose(out.to_dense().numpy(), a @ b, atol=1e-12)
    v = RNG.standard_normal(5)
    np.testing.assert_allclose(S.mv(t(a).to_sparse_coo(2), t(v)).numpy(), a @ v, atol=1e-12)
    inp, y = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    np.testing.assert_allclose(S.addmm(t(inp), t(a).to_sparse_csr(), t(y), 3.0, 2.0).numpy(),
                               3 * inp + 2 * a @ y, atol=1e-12)
    with pytest.raises(ValueError, match="matmul: y must have shape"):
        S.matmul(t(a).to_sparse_coo(2), t(np.ones((4, 2))))
    with pytest.raises(TypeError, match="mv: vec must be a 1-D Tensor"):
        S.mv(t(a).to_sparse_coo(2), t(np.ones((5, 1))))


@pytest.mark.parametrize("batch", [(), (2,)])
def test_masked_matmul(batch):
    x, y = RNG.standard_normal(batch + (4, 6)), RNG.standard_normal(batch + (6, 5))
    mask = random_sparse(batch + (4, 5))
    out = S.masked_matmul(t(x), t(y), t(mask).to_sparse_csr())
    np.testing.assert_allclose(out.to_dense().numpy(), np.where(mask != 0, x @ y, 0.0), atol=1e-12)
    check_values_grad(lambda xv: S.masked_matmul(xv, t(y), t(mask).to_sparse_csr()), x)


def test_mask_as_and_is_same_shape():
    x = RNG.standard_normal((3, 4))
    m = random_sparse((3, 4))
    for mask in (t(m).to_sparse_coo(2), t(m).to_sparse_csr()):
        out = S.mask_as(t(x), mask)
        np.testing.assert_allclose(out.to_dense().numpy(), np.where(m != 0, x, 0.0))
    check_values_grad(lambda xv: S.mask_as(xv, t(m).to_sparse_coo(2)), x)
    assert S.is_same_shape(t(x), t(m).to_sparse_csr())
    assert not S.is_same_shape(t(x), t(m.T).to_sparse_coo(2))
    with pytest.raises(ValueError, match=r"mask_as: x must have mask's shape \[3, 4\]"):
        S.mask_as(t(x.T), t(m).to_sparse_coo(2))


@pytest.mark.parametrize("axis, keepdim", [(None, False), (None, True), (0, False), (1, False),
                                           (-1, True), (0, True), ([0, 1], False)])
@pytest.mark.parametrize("sparse_dim", [1, 2, 3])
def test_sum_against_numpy(axis, keepdim, sparse_dim):
    a = random_sparse((3, 4, 2), sparse_dim=sparse_dim)
    out = S.sum(t(a).to_sparse_coo(sparse_dim), axis=axis, keepdim=keepdim).to_dense().numpy()
    ref = a.sum(axis=None if axis is None else tuple(axis) if isinstance(axis, list) else axis,
                keepdims=keepdim)
    np.testing.assert_allclose(out.reshape(-1), np.asarray(ref).reshape(-1), atol=1e-12)


def test_sum_layout_csr_and_grad():
    out = S.sum(t([[-2.0, 0.0], [1.0, 2.0]]).to_sparse_coo(1), axis=0)
    assert list(out.shape) == [1, 2] and out.indices().numpy().tolist() == [[0]]
    a = random_sparse((3, 4))
    rows = S.sum(t(a).to_sparse_csr(), axis=-1)
    assert rows.is_sparse_csr()
    np.testing.assert_allclose(rows.to_dense().numpy(), a.sum(1, keepdims=True), atol=1e-12)
    assert S.sum(t([[1, 0], [2, 3]], dtype="int32").to_sparse_coo(2)).dtype == oar.int64
    coo = t(a).to_sparse_coo(2)
    check_values_grad(lambda v: S.sum(S.sparse_coo_tensor(coo.indices(), v, [3, 4],
                                                          stop_gradient=False), axis=1),
                      coo.values().numpy())
    with pytest.raises(ValueError, match=r"sum: axis must be ints in \[-2, 2\)"):
        S.sum(coo, axis=2)


@pytest.mark.parametrize("fmt", FORMATS)
def test_reshape_against_numpy(fmt):
    a = random_sparse((6, 2, 3)) if fmt == "coo" else random_sparse((6, 4))
    new = [1, 0, 2, -1, 3] if fmt == "coo" else [3, -1]
    out = S.reshape(sparse_of(a, fmt), new)
    ref = a.reshape([a.shape[i] if d == 0 else d for i, d in enumerate(new)])
    np.testing.assert_allclose(out.to_dense().numpy(), ref)
    with pytest.raises(ValueError, match="reshape: cannot reshape"):
        S.reshape(sparse_of(a, fmt), [5, -1])


def test_reshape_keeps_dense_dims():
    a = random_sparse((4, 3, 2), sparse_dim=2)
    out = S.reshape(t(a).to_sparse_coo(2), [2, 6, 2])
    np.testing.assert_allclose(out.to_dense().numpy(), a.reshape(2, 6, 2))
    with pytest.raises(ValueError, match="reshape: a COO tensor's dense dims"):
        S.reshape(t(a).to_sparse_coo(2), [4, 6])


@pytest.mark.parametrize("perm, sparse_dim", [([1, 0, 2], 2), ([2, 0, 1], 3), ([0, 2, 1], 1),
                                              ([2, 1, 0], 2)])
def test_transpose_against_numpy(perm, sparse_dim):
    a = random_sparse((2, 3, 4), sparse_dim=sparse_dim)
    out = S.transpose(t(a).to_sparse_coo(sparse_dim), perm)
    np.testing.assert_allclose(out.to_dense().numpy(), a.transpose(perm))
    csr = S.transpose(t(a[0]).to_sparse_csr(), [1, 0])
    assert csr.is_sparse_csr()
    np.testing.assert_allclose(csr.to_dense().numpy(), a[0].T)
    with pytest.raises(ValueError, match="transpose: perm must be a permutation"):
        S.transpose(t(a).to_sparse_coo(sparse_dim), [0, 0, 1])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("axes, starts, ends", [([0, 1], [1, 0], [3, -2]), ([1], [-3], [100]),
                                                ([0], [2], [2])])
def test_slice_against_numpy(fmt, axes, starts, ends):
    a = random_sparse((4, 5))
    out = S.slice(sparse_of(a, fmt), axes, starts, ends)
    sl = [slice(None)] * 2
    for ax, s, e in zip(axes, starts, ends):
        sl[ax] = slice(s, e)
    np.testing.assert_allclose(out.to_dense().numpy(), a[tuple(sl)])


def test_slice_dense_dims_and_grad():
    a = random_sparse((4, 3, 5), sparse_dim=2)
    coo = t(a).to_sparse_coo(2)
    out = S.slice(coo, [2, 0], [1, 1], [4, 3])
    np.testing.assert_allclose(out.to_dense().numpy(), a[1:3, :, 1:4])
    check_values_grad(lambda v: S.slice(S.sparse_coo_tensor(coo.indices(), v, [4, 3, 5],
                                                            stop_gradient=False), [0], [1], [3]),
                      coo.values().numpy())


def test_pca_lowrank_reconstructs_the_centred_matrix():
    a = random_sparse((6, 5), density=0.7)
    u, s, v = S.pca_lowrank(t(a).to_sparse_coo(2), q=5)
    c = a - a.mean(0)
    np.testing.assert_allclose(u.numpy() @ np.diag(s.numpy()) @ v.numpy().T, c, atol=1e-10)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(c, compute_uv=False), atol=1e-10)
    with pytest.raises(ValueError, match=r"pca_lowrank: q must be an int in \[0, 5\]"):
        S.pca_lowrank(t(a).to_sparse_coo(2), q=9)
