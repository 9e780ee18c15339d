"""The manipulation functions of python/oar/_manip_composites.py against NumPy in float64:
forward on several shapes (0-size included), gradients by central differences (through the
ops they are written with), bad inputs raising errors that name the function."""
import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, Gen, OpCase, case_id, check_bad_inputs, check_forward,
                           check_grad, bools, tensor)

ALL = FLOAT_DTYPES + ["int64"]
I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731
F = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731


def flat_cat(ts):
    return oar.concat([t.reshape([-1]) for t in ts])


def np_flat_cat(arrs):
    return np.concatenate([a.reshape(-1) for a in arrs]) if arrs else np.zeros(0)


def np_block_diag(*ms):
    ms = [np.atleast_2d(m) for m in ms]
    out = np.zeros((sum(m.shape[0] for m in ms), sum(m.shape[1] for m in ms)))
    r = c = 0
    for m in ms:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def np_index_fill(x, idx, axis, value):
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[axis] = idx
    out[tuple(sl)] = value
    return out


def np_diagonal_scatter(x, y, offset, a1, a2):
    out = x.copy()
    xm = np.moveaxis(out, (a1, a2), (-2, -1))
    n1, n2 = xm.shape[-2:]
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    xm[..., rows, rows + offset] = y
    return out


def np_masked_scatter(x, mask, value):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape).copy()
    m = np.broadcast_to(mask, shape)
    out[m] = value.reshape(-1)[:m.sum()]
    return out


CASES = [
    OpCase("cat", lambda x, y: oar.cat([x, y], axis=1), lambda x, y: np.concatenate([x, y], 1),
           inputs=[(2, 3), (2, 4)], dtypes=ALL, shapes=[[(2, 3), (2, 4)], [(0, 3), (0, 1)]]),
    OpCase("permute", lambda x: oar.permute(x, [2, 0, 1]), lambda x: x.transpose(2, 0, 1),
           inputs=[(2, 3, 4)], dtypes=ALL, shapes=[[(2, 3, 4)], [(0, 3, 4)]]),
    OpCase("swapaxes", lambda x: oar.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1),
           inputs=[(2, 3, 4)], dtypes=ALL),
    OpCase("matrix_transpose", oar.matrix_transpose, lambda x: np.swapaxes(x, -1, -2),
           inputs=[(2, 3, 4)], dtypes=ALL, bad_inputs=[((F([1.0]),), ValueError, "at least 2")]),
    OpCase("ravel", oar.ravel, np.ravel, inputs=[(2, 3)], dtypes=ALL, shapes=[[(2, 3)], [()]]),
    OpCase("narrow", lambda x: oar.narrow(x, 1, -3, 2), lambda x: x[:, 1:3], inputs=[(2, 4)],
           dtypes=ALL),
    OpCase("unflatten", lambda x: oar.unflatten(x, 1, [2, -1]), lambda x: x.reshape(2, 2, 3),
           inputs=[(2, 6)], dtypes=ALL),
    OpCase("view_as", oar.view_as, lambda x, o: x.reshape(o.shape),
           inputs=[(2, 6), Gen(lambda r, s: r.standard_normal(s), (3, 4), False)],
           dtypes=ALL, grad_shapes=[[(2, 6), (3, 4)]]),
    OpCase("atleast_3d", lambda x: oar.atleast_3d(x), np.atleast_3d, inputs=[(4,)],
           shapes=[[(4,)], [()], [(2, 3)], [(0,)]]),
    OpCase("atleast_2d", lambda x: oar.atleast_2d(x), np.atleast_2d, inputs=[(4,)],
           shapes=[[(4,)], [()], [(2, 3, 1)]]),
    OpCase("hstack", lambda x, y: oar.hstack([x, y]), lambda x, y: np.hstack([x, y]),
           inputs=[(2, 3), (2, 1)], dtypes=ALL, shapes=[[(2, 3), (2, 1)], [(3,), (0,)]]),
    OpCase("vstack", lambda x, y: oar.vstack([x, y]), lambda x, y: np.vstack([x, y]),
           inputs=[(3,), (3,)], dtypes=ALL, shapes=[[(3,), (3,)], [(2, 3), (0, 3)]]),
    OpCase("dstack", lambda x, y: oar.dstack([x, y]), lambda x, y: np.dstack([x, y]),
           inputs=[(2, 3), (2, 3)], dtypes=ALL),
    OpCase("column_stack", lambda x, y: oar.column_stack([x, y]),
           lambda x, y: np.column_stack([x, y]), inputs=[(3,), (3, 2)], dtypes=ALL),
    OpCase("tensor_split", lambda x: flat_cat(oar.tensor_split(x, 3, axis=1)),
           lambda x: np_flat_cat(np.array_split(x, 3, 1)), inputs=[(2, 7)], dtypes=ALL,
           shapes=[[(2, 7)], [(2, 2)], [(0, 5)]]),
    OpCase("tensor_split_indices", lambda x: flat_cat(oar.tensor_split(x, [1, -2, 9])),
           lambda x: np_flat_cat(np.split(x, [1, x.shape[0] - 2, 9])), inputs=[(6, 2)],
           op="tensor_split"),
    OpCase("hsplit", lambda x: flat_cat(oar.hsplit(x, 2)), lambda x: np_flat_cat(np.hsplit(x, 2)),
           inputs=[(3, 4)], dtypes=ALL),
    OpCase("vsplit", lambda x: flat_cat(oar.vsplit(x, [1])), lambda x: np_flat_cat(np.vsplit(x, [1])),
           inputs=[(3, 4)], dtypes=ALL),
    OpCase("dsplit", lambda x: flat_cat(oar.dsplit(x, 2)), lambda x: np_flat_cat(np.dsplit(x, 2)),
           inputs=[(2, 3, 4)], dtypes=ALL),
    OpCase("block_diag", lambda a, b, c: oar.block_diag([a, b, c]), np_block_diag,
           inputs=[(2, 3), (3,), ()], dtypes=ALL),
    OpCase("cartesian_prod", lambda a, b: oar.cartesian_prod([a, b]),
           lambda a, b: np.stack(np.meshgrid(a, b, indexing="ij"), -1).reshape(-1, 2),
           inputs=[(3,), (2,)], dtypes=ALL),
    OpCase("combinations", lambda x: oar.combinations(x, 2),
           lambda x: np.array([[x[i], x[j]] for i in range(len(x)) for j in range(i + 1, len(x))]),
           inputs=[(4,)], dtypes=ALL, bad_inputs=[((F(np.ones((2, 2))),), ValueError, "1-D")]),
    OpCase("diagflat", lambda x: oar.diagflat(x, 1), lambda x: np.diagflat(x, 1),
           inputs=[(2, 2)], dtypes=ALL, shapes=[[(2, 2)], [(3,)]]),
    OpCase("index_fill", lambda x: oar.index_fill(x, I64([0, -1]), 1, -7.0),
           lambda x: np_index_fill(x, [0, -1], 1, -7.0), inputs=[(2, 4)], dtypes=ALL,
           shapes=[[(2, 4)], [(0, 4)]]),
    OpCase("index_sample", lambda x: oar.index_sample(x, I64([[0, 2], [1, 1], [3, 0]])),
           lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1], [3, 0]]), 1),
           inputs=[(3, 4)], dtypes=ALL),
    OpCase("masked_scatter", lambda x, m, v: oar.masked_scatter(x, m, v), np_masked_scatter,
           inputs=[(2, 3), bools((3,)), (8,)], shapes=[[(2, 3), (3,), (8,)], [(0, 3), (3,), (2,)]],
           grad_shapes=[[(2, 3), (3,), (8,)]],
           bad_inputs=[((F(np.ones(3)), oar.to_tensor([True] * 3), F([1.0])), ValueError,
                        "value has only")]),
    OpCase("select_scatter", lambda x, v: oar.select_scatter(x, v, 1, -1),
           lambda x, v: np.concatenate([x[:, :-1], v[:, None]], 1), inputs=[(2, 4), (2,)],
           dtypes=ALL),
    OpCase("diagonal_scatter", lambda x, y: oar.diagonal_scatter(x, y, 1),
           lambda x, y: np_diagonal_scatter(x, y, 1, 0, 1), inputs=[(3, 4), (3,)], dtypes=ALL),
    OpCase("diagonal_scatter_axes", lambda x, y: oar.diagonal_scatter(x, y, -1, 2, 0),
           lambda x, y: np_diagonal_scatter(x, y, -1, 2, 0), inputs=[(3, 2, 4), (2, 3)],
           op="diagonal_scatter"),
    OpCase("msort", oar.msort, lambda x: np.sort(x, 0), inputs=[(4, 3)], dtypes=ALL),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_broadcast_shape():
    assert oar.broadcast_shape([2, 1, 3], [4, 1]) == [2, 4, 3]
    assert oar.broadcast_shape([], [3]) == [3]
    with pytest.raises(ValueError, match="broadcast_shape.*sizes 2 and 3"):
        oar.broadcast_shape([2], [3])


@pytest.mark.parametrize("row, col, offset", [(4, 4, 0), (3, 5, 1), (5, 3, -2), (0, 3, 0)])
def test_tri_indices(row, col, offset):
    np.testing.assert_array_equal(oar.tril_indices(row, col, offset).numpy(),
                                  np.stack(np.tril_indices(row, offset, col)).reshape(2, -1))
    np.testing.assert_array_equal(oar.triu_indices(row, col, offset).numpy(),
                                  np.stack(np.triu_indices(row, offset, col)).reshape(2, -1))
    assert oar.tril_indices(3, 3, dtype="int32").dtype.name == "int32"
    with pytest.raises(ValueError, match="tril_indices: row and col"):
        oar.tril_indices(-1, 2)


def test_atleast_several_and_argwhere_shard_index():
    a, b = oar.atleast_1d(F(1.0), F([1.0, 2.0]))
    assert a.shape == [1] and b.shape == [2]
    x = np.array([[0, 1], [2, 0]])
    np.testing.assert_array_equal(oar.argwhere(I64(x)).numpy(), np.argwhere(x))
    lab = I64([[16], [1], [9], [31]])
    np.testing.assert_array_equal(oar.shard_index(lab, 32, 2, 0).numpy(), [[-1], [1], [9], [-1]])
    np.testing.assert_array_equal(oar.shard_index(lab, 32, 2, 1).numpy(), [[0], [-1], [-1], [15]])
    with pytest.raises(ValueError, match="shard_index: shard_id"):
        oar.shard_index(lab, 32, 2, 2)


@pytest.mark.parametrize("reduce, np_fn", [("sum", np.add), ("prod", np.multiply),
                                           ("amax", np.maximum), ("amin", np.minimum)])
def test_scatter_reduce_and_add(reduce, np_fn):
    rng = np.random.default_rng(3)
    x, src = rng.standard_normal((3, 4)), rng.standard_normal((3, 2))
    idx = np.array([[0, 0], [3, 1], [2, 2]])
    want = x.copy()
    for i in range(3):
        for j in range(2):
            want[i, idx[i, j]] = np_fn(want[i, idx[i, j]], src[i, j])
    got = oar.scatter_reduce(F(x), 1, I64(idx), F(src), reduce)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if reduce == "sum":
        np.testing.assert_allclose(oar.scatter_add(F(x), 1, I64(idx), F(src)).numpy(), want)
    with pytest.raises(ValueError, match="scatter_reduce: reduce"):
        oar.scatter_reduce(F(x), 1, I64(idx), F(src), "max")


def test_methods_bound():
    x = F(np.arange(6.0).reshape(2, 3))
    assert x.permute(1, 0).shape == [3, 2] and x.swapaxes(0, 1).shape == [3, 2]
    assert x.ravel().shape == [6] and x.unflatten(1, [3, 1]).shape == [2, 3, 1]
    assert [t.shape for t in x.tensor_split(2, axis=1)] == [[2, 2], [2, 1]]


BAD = [  # (function, args, kwargs, exception, message fragment); the message names the function
    (oar.swapaxes, (F(np.ones((2, 2))), 0, 3), {}, ValueError, "swapaxes: axis1 3"),
    (oar.narrow, (F(np.ones((2, 4))), 1, 3, 2), {}, ValueError, "narrow: start 3 and length 2"),
    (oar.tensor_split, (F(np.ones(3)), 0), {}, ValueError, "tensor_split: num_or_indices"),
    (oar.hsplit, (F(np.ones((2, 3))), 2), {}, ValueError, "hsplit: dim 1 (size 3)"),
    (oar.vsplit, (F(np.ones(4)), 2), {}, ValueError, "vsplit: x must have at least 2"),
    (oar.block_diag, ([F(np.ones((1, 1, 1)))],), {}, ValueError, "block_diag: inputs[0]"),
    (oar.cartesian_prod, ([F(np.ones((2, 2))), F([1.0])],), {}, ValueError, "cartesian_prod: x[0]"),
    (oar.index_fill, (F(np.ones((2, 3))), I64([3]), 1, 0.0), {}, IndexError, "index_fill: index"),
    (oar.index_sample, (F(np.ones((2, 3))), I64([[0]])), {}, ValueError, "index_sample: x and"),
    (oar.select_scatter, (F(np.ones((2, 3))), F(np.ones(3)), 1, 0), {}, ValueError,
     "select_scatter: values must have shape [2]"),
    (oar.select_scatter, (F(np.ones((2, 3))), F(np.ones(2)), 1, 3), {}, IndexError,
     "select_scatter: index 3"),
    (oar.diagonal_scatter, (F(np.ones((3, 3))), F(np.ones(2))), {}, ValueError,
     "diagonal_scatter: y must have the diagonal's shape [3]"),
    (oar.diagonal_scatter, (F(np.ones((3, 3))), F(np.ones(3))), {"axis1": 1, "axis2": 1},
     ValueError, "diagonal_scatter: axis1"),
    (oar.permute, ([1, 2], [0]), {}, TypeError, "permute: argument 'input'"),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, msg", BAD,
                         ids=[f"{b[0].__name__}{i}" for i, b in enumerate(BAD)])
def test_bad_arguments(fn, args, kwargs, exc, msg):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert msg in str(info.value), str(info.value)


def test_t_rank_take_and_helpers():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(oar.t(F(a)).numpy(), a.T)
    np.testing.assert_array_equal(oar.t(F(a[0])).numpy(), a[0])
    with pytest.raises(ValueError, match="t: input must have at most 2 dims"):
        oar.t(F(np.ones((1, 1, 1))))
    r = oar.rank(F(np.ones((2, 3, 4))))
    assert r.shape == [] and r.dtype.name == "int32" and int(r) == 3
    assert oar.is_tensor(F(a)) and not oar.is_tensor(a)
    assert oar.tolist(F(a)) == a.tolist()
    assert oar.broadcast_shapes([2, 1], [3], [1, 1, 1]) == [1, 2, 3]
    idx = np.array([[0, -1], [7, 2]])
    np.testing.assert_array_equal(oar.take(F(a), I64(idx), mode="wrap").numpy(),
                                  np.take(a, idx, mode="wrap"))
    np.testing.assert_array_equal(oar.take(F(a), I64(idx), mode="clip").numpy(),
                                  np.take(a, np.clip(idx, 0, 5)))
    np.testing.assert_array_equal(oar.take(F(a), I64([[0, -1]])).numpy(), [[0.0, 5.0]])
    with pytest.raises(IndexError, match=r"take: index values must be in \[-6, 5\]"):
        oar.take(F(a), I64(idx))
    with pytest.raises(ValueError, match="take: mode"):
        oar.take(F(a), I64(idx), mode="bad")
    x = F(a)
    x.stop_gradient = False
    oar.take(x, I64([[1, 1], [4, 0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0, 0.0], [0.0, 1.0, 0.0]])
