"""Manipulation and indexing ops (paddle_core/ops/manipulation.yaml) against NumPy:
forward on several shapes (0-size included) and dtypes, gradients by central
differences, and bad inputs raising the right exception type naming the op."""
import dataclasses

import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, OpCase, case_id, check_bad_inputs, check_forward,
                           check_grad, tensor)

ALL = FLOAT_DTYPES + ["int64"]
I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731
I32 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int32))  # noqa: E731


def flat_cat(ts):
    """One tensor from a list output (for the single-output harness)."""
    return oar.concat([t.reshape([-1]) for t in ts])


def np_flat_cat(arrs):
    return np.concatenate([a.reshape(-1) for a in arrs])


def np_scatter(x, index, updates, overwrite=True):
    out = x.copy()
    if not overwrite:
        out[index] = 0
    for j, i in enumerate(index):
        out[i] = updates[j] if overwrite else out[i] + updates[j]
    return out


def np_index_put(x, indices, value, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), value)
    else:
        out[tuple(indices)] = value
    return out


GIDX = [2, 0, 2, -1]            # repeats and a negative index
ND_IDX = [[0, 1], [2, 3], [0, 1]]  # repeated coordinate
MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]])
SC_IDX = [1, 0, 1]              # repeated: overwrite keeps the last

CASES = [
    # ---- joining / splitting
    OpCase("concat", lambda a, b, c: oar.concat([a, b, c], axis=1),
           lambda a, b, c: np.concatenate([a, b, c], 1), inputs=[(2, 3), (2, 1), (2, 2)],
           dtypes=ALL + ["bool"],
           shapes=[[(2, 3), (2, 1), (2, 2)], [(2, 0), (2, 1), (2, 2)], [(0, 3), (0, 1), (0, 2)],
                   [(2, 3, 2), (2, 1, 2), (2, 2, 2)]],
           bad_inputs=[(lambda: (tensor([[1.0]]), tensor([1.0]), tensor([[1.0]])), ValueError,
                        "shape"),
                       (lambda: (tensor([[1.0]]), tensor([[1]], "int64"), tensor([[1.0]])),
                        TypeError, "dtype")]),
    OpCase("concat[axis=-1]", lambda a, b: oar.concat([a, b], axis=-1),
           lambda a, b: np.concatenate([a, b], -1), inputs=[(2, 3), (2, 2)], op="concat"),
    OpCase("concat[axis=0]", lambda a, b: oar.concat((a, b)), lambda a, b: np.concatenate([a, b]),
           inputs=[(2, 3), (1, 3)], op="concat"),
    OpCase("stack", lambda a, b: oar.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1),
           inputs=[(2, 3), (2, 3)], dtypes=ALL,
           shapes=[[(2, 3), (2, 3)], [(0, 3), (0, 3)]],
           bad_inputs=[(lambda: (tensor([1.0, 2.0]), tensor([1.0])), ValueError, "shape"),
                       (lambda: (tensor([1.0]), tensor([1], "int64")), TypeError, "dtype")]),
    OpCase("stack[axis=-1]", lambda a, b: oar.stack([a, b], axis=-1),
           lambda a, b: np.stack([a, b], -1), inputs=[(2, 3), (2, 3)], op="stack",
           shapes=[[(2, 3), (2, 3)], [(), ()]]),
    OpCase("unstack", lambda x: flat_cat(oar.unstack(x, axis=1)),
           lambda x: np_flat_cat([x[:, i] for i in range(x.shape[1])]),
           inputs=[(2, 3, 2)], dtypes=ALL, op="unstack",
           bad_inputs=[(lambda: (tensor(1.0),), ValueError, "rank")]),
    OpCase("unbind", lambda x: flat_cat(oar.unbind(x, axis=-1)),
           lambda x: np_flat_cat([x[..., i] for i in range(x.shape[-1])]),
           inputs=[(2, 3, 2)], dtypes=ALL, op="unbind", shapes=[[(2, 3, 2)], [(0, 3)], [(4,)]],
           bad_inputs=[(lambda: (tensor(1.0),), ValueError, "rank")]),
    OpCase("split[sections]", lambda x: flat_cat(oar.split(x, [1, -1, 2], axis=1)),
           lambda x: np_flat_cat(np.split(x, [1, 3], 1)), inputs=[(2, 5)], dtypes=ALL,
           shapes=[[(2, 5)], [(0, 5)], [(2, 5, 2)]], op="split"),
    OpCase("split[num]", lambda x: flat_cat(oar.split(x, 3, axis=-1)),
           lambda x: np_flat_cat(np.split(x, 3, -1)), inputs=[(2, 6)], dtypes=ALL, op="split",
           bad_inputs=[(lambda: (tensor(np.zeros((2, 5))),), ValueError, "equal")]),
    OpCase("tile", lambda x: oar.tile(x, [2, 1, 3]), lambda x: np.tile(x, [2, 1, 3]),
           inputs=[(2, 3)], dtypes=ALL + ["bool"], shapes=[[(2, 3)], [(3,)], [(0, 2)], [()]]),
    OpCase("tile[short]", lambda x: oar.tile(x, [2]), lambda x: np.tile(x, [2]),
           inputs=[(2, 3)], op="tile"),
    OpCase("tile[zero]", lambda x: x.tile([0, 2]), lambda x: np.tile(x, [0, 2]),
           inputs=[(2, 3)], op="tile"),
    # ---- gather family
    OpCase("gather", lambda x: oar.gather(x, I64(GIDX), axis=1),
           lambda x: np.take(x, GIDX, axis=1), inputs=[(2, 3, 2)], dtypes=ALL + ["bool"],
           shapes=[[(2, 3, 2)], [(0, 3, 2)]],
           bad_inputs=[(lambda: (tensor(np.zeros((2, 1))),), IndexError, "out of range"),
                       (lambda: (tensor(np.zeros((2, 2))),), IndexError, "size 2")]),
    OpCase("gather[axis=None]", lambda x: oar.gather(x, I32([1, 0, 1])),
           lambda x: x[[1, 0, 1]], inputs=[(2, 3)], op="gather"),
    OpCase("gather[0-D index]", lambda x: x.gather(I64(1), axis=1), lambda x: x[:, 1],
           inputs=[(2, 3)], op="gather"),
    OpCase("gather[empty index]", lambda x: oar.gather(x, I64(np.zeros(0)), axis=0),
           lambda x: x[:0], inputs=[(2, 3)], op="gather"),
    OpCase("index_select", lambda x: oar.index_select(x, I64([3, 0, 3]), axis=-1),
           lambda x: x[..., [3, 0, 3]], inputs=[(2, 4)], dtypes=ALL,
           shapes=[[(2, 4)], [(0, 4)]],
           bad_inputs=[(lambda: (tensor(np.zeros((2, 3))),), IndexError, "index_select")]),
    OpCase("gather_nd", lambda x: oar.gather_nd(x, I64(ND_IDX)),
           lambda x: x[tuple(np.array(ND_IDX).T)], inputs=[(3, 4, 2)], dtypes=ALL,
           shapes=[[(3, 4, 2)], [(3, 4, 0)]],
           bad_inputs=[(lambda: (tensor(np.zeros((2, 2))),), IndexError, "out of range")]),
    OpCase("gather_nd[full]", lambda x: oar.gather_nd(x, I64([[[0, 1, 1]], [[2, 0, 0]]])),
           lambda x: x[[[0], [2]], [[1], [0]], [[1], [0]]], inputs=[(3, 2, 2)], op="gather_nd"),
    OpCase("masked_select", lambda x: oar.masked_select(x, oar.to_tensor(MASK)),
           lambda x: x[MASK], inputs=[(3, 4)], dtypes=ALL + ["bool"]),
    OpCase("masked_select[broadcast]", lambda x: oar.masked_select(x, oar.to_tensor(MASK[0])),
           lambda x: x[np.broadcast_to(MASK[0], x.shape)], inputs=[(2, 4)], op="masked_select",
           shapes=[[(2, 4)], [(0, 4)]],
           bad_inputs=[(lambda: (tensor(np.zeros((2, 3))),), ValueError, "broadcast")]),
    OpCase("scatter", lambda x, u: oar.scatter(x, I64(SC_IDX), u),
           lambda x, u: np_scatter(x, SC_IDX, u), inputs=[(3, 2), (3, 2)], dtypes=ALL,
           bad_inputs=[(lambda: (tensor(np.zeros((3, 2))), tensor(np.zeros((2, 2)))),
                        ValueError, "updates")]),
    OpCase("scatter[add]", lambda x, u: oar.scatter(x, I64(SC_IDX), u, overwrite=False),
           lambda x, u: np_scatter(x, SC_IDX, u, False), inputs=[(3, 2), (3, 2)], dtypes=ALL,
           op="scatter"),
    OpCase("index_put", lambda x, v: oar.index_put(x, [I64([0, 2, 0]), I64([1, 1, 3])], v),
           lambda x, v: np_index_put(x, [[0, 2, 0], [1, 1, 3]], v), inputs=[(3, 4), (3,)],
           dtypes=ALL, shapes=[[(3, 4), (3,)], [(3, 4), ()]],
           bad_inputs=[(lambda: (tensor(np.zeros((3, 4))), tensor(np.zeros(2))), ValueError,
                        "index_put")]),
    OpCase("index_put[accumulate]",
           lambda x, v: oar.index_put(x, (I64([0, 2, 0]),), v, accumulate=True),
           lambda x, v: np_index_put(x, [[0, 2, 0]], v, True), inputs=[(3, 4), (4,)],
           op="index_put"),
    OpCase("index_put[bool]", lambda x, v: oar.index_put(x, [oar.to_tensor(MASK)], v),
           lambda x, v: np_index_put(x, [MASK], v), inputs=[(3, 4), (1,)], op="index_put"),
    OpCase("slice_scatter", lambda x, v: oar.slice_scatter(x, v, [1], [2], [6], [2]),
           lambda x, v: _np_set(x, (slice(None), slice(2, 6, 2)), v), inputs=[(3, 7), (3, 1)],
           dtypes=ALL + ["bool"], shapes=[[(3, 7), (3, 1)], [(3, 7), (3, 2)], [(0, 7), (2,)]]),
    OpCase("slice_scatter[neg]", lambda x, v: x.slice_scatter(v, [0, 1], [-1, 0], [0, 9], [-1, 3]),
           lambda x, v: _np_set(x, (slice(-1, 0, -1), slice(0, 9, 3)), v),
           inputs=[(3, 7), (2, 3)], op="slice_scatter",
           bad_inputs=[(lambda: (tensor(np.zeros((3, 7))), tensor(np.zeros((3, 3)))),
                        ValueError, "broadcast")]),
    # ---- existing view ops through the same harness
    OpCase("reshape", lambda x: x.reshape([3, -1]), lambda x: x.reshape(3, -1),
           inputs=[(2, 3, 2)], dtypes=ALL),
    OpCase("transpose", lambda x: x.transpose([2, 0, 1]), lambda x: x.transpose(2, 0, 1),
           inputs=[(2, 3, 2)], dtypes=ALL),
    OpCase("select", lambda x: oar._C.ops._select(x, 1, -1), lambda x: x[:, -1],
           inputs=[(2, 3, 2)], dtypes=ALL),
    OpCase("select[axis=-1]", lambda x: oar._C.ops._select(x, -1, 0), lambda x: x[..., 0],
           inputs=[(2, 3, 2)], op="select"),
]

# Data movement is exact in every dtype: the 16-bit floats too.
NARROW = ["float16", "bfloat16"]
CASES += [
    OpCase(c.name + "[16-bit]", c.fn_oar, c.fn_numpy, inputs=c.inputs, dtypes=NARROW, grad=False,
           op=c.op or c.name, shapes=c.shapes)
    for c in CASES if c.name in ("concat", "stack", "split[sections]", "tile", "gather",
                                 "gather_nd", "masked_select", "scatter", "index_put",
                                 "slice_scatter")
]


def _np_set(x, idx, v):
    out = x.copy()
    out[idx] = v
    return out


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    nonempty = [s for s in case.shape_sets() if all(0 not in sh for sh in s)]
    check_grad(dataclasses.replace(case, grad_shapes=case.grad_shapes or nonempty[:2]))


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


# ---- behaviours the table does not cover

def test_split_returns_list_and_sections():
    x = oar.to_tensor(np.arange(10.0).reshape(2, 5))
    parts = x.split([2, 3], axis=1)
    assert isinstance(parts, list) and [p.shape for p in parts] == [[2, 2], [2, 3]]
    parts = oar.split(x, 5, axis=1)
    assert len(parts) == 5 and parts[4].numpy().tolist() == [[4.0], [9.0]]
    assert [p.shape for p in oar.split(x, I64([1, 4]), axis=1)] == [[2, 1], [2, 4]]
    with pytest.raises(ValueError, match="split"):
        oar.split(x, [2, 2], axis=1)
    with pytest.raises(ValueError, match="split"):
        oar.split(x, [-1, -1], axis=1)
    with pytest.raises(IndexError, match="split"):
        oar.split(x, 2, axis=2)


def test_split_grad_with_unused_outputs():
    x = oar.to_tensor(np.arange(6.0), stop_gradient=False)
    a, b, c = oar.split(x, 3)
    (b * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 2, 2, 0, 0])


def test_nonzero_and_where():
    a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    x = oar.to_tensor(a)
    np.testing.assert_array_equal(oar.nonzero(x).numpy(), np.argwhere(a))
    assert oar.nonzero(x).dtype == oar.int64
    rows, cols = oar.nonzero(x, as_tuple=True)
    assert rows.shape == [3] and rows.dtype == oar.int64  # Paddle 3.x: 1-D per dimension
    np.testing.assert_array_equal(cols.numpy(), np.nonzero(a)[1])
    r, c = oar.where(x > 0)
    assert r.shape == [3] and c.dtype == oar.int64
    np.testing.assert_array_equal(r.numpy(), np.nonzero(a)[0])
    np.testing.assert_array_equal(x[oar.where(x > 0)].numpy(), a[np.nonzero(a)])
    np.testing.assert_array_equal(oar.where(x > 0, x, -x).numpy(), np.abs(a))
    assert oar.nonzero(oar.zeros([0, 3])).shape == [0, 2]
    assert oar.nonzero(tensor([True, False, True], "bool")).numpy().tolist() == [[0], [2]]
    assert x.nonzero().shape == [3, 2]
    with pytest.raises(ValueError, match="where"):
        oar.where(x > 0, x)


def test_index_dtype_errors():
    x = tensor(np.zeros((3, 2)))
    for fn in (lambda: oar.gather(x, tensor([0.0])), lambda: oar.index_select(x, tensor([0.0])),
               lambda: oar.gather_nd(x, tensor([[0.0]])),
               lambda: oar.scatter(x, tensor([0.0]), x[:1]),
               lambda: oar.index_put(x, [tensor([0.0])], tensor(1.0))):
        with pytest.raises(TypeError, match="int32 or int64"):
            fn()
    with pytest.raises(TypeError, match="masked_select"):
        oar.masked_select(x, I64([[1, 0]]))
    with pytest.raises(ValueError, match="index_select"):
        oar.index_select(x, I64([[0]]))
    with pytest.raises(ValueError, match="gather_nd"):
        oar.gather_nd(x, I64([[0, 0, 0]]))
    with pytest.raises(TypeError, match="index_put"):
        oar.index_put(x, [I64([0])], tensor(1.0, "float64"))
    with pytest.raises(IndexError, match="index_put"):
        oar.index_put(x, [I64([0])] * 3, tensor(1.0))
    with pytest.raises(IndexError, match="index_put"):
        oar.index_put(x, [I64([3])], tensor(1.0))


def test_scatter_overwrite_grad_goes_to_last_update():
    x = oar.to_tensor(np.zeros((3, 2)), stop_gradient=False)
    u = oar.to_tensor(np.ones((3, 2)), stop_gradient=False)
    out = oar.scatter(x, I64([1, 1, 0]), u)
    (out * oar.to_tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(u.grad.numpy(), [[0, 0], [2, 3], [0, 1]])
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [0, 0], [4, 5]])


def test_inplace_variants():
    x = oar.to_tensor(np.zeros((3, 2)))
    y = x.scatter_(I64([2]), oar.to_tensor(np.ones((1, 2))))
    assert y is x and x.numpy()[2].tolist() == [1, 1]
    oar.index_put_(x, [I64([0])], oar.to_tensor(5.0, dtype="float64"))
    assert x.numpy()[0].tolist() == [5, 5]
    w = oar.to_tensor(np.zeros(3), stop_gradient=False)
    with pytest.raises(RuntimeError, match="index_put_"):
        w.index_put_([I64([0])], oar.to_tensor(1.0, dtype="float64"))


def test_double_backward_gather():
    x = oar.to_tensor(np.array([1.0, 2.0, 3.0]), stop_gradient=False)
    y = oar.gather(x, I64([0, 0, 2])) ** 2
    (g,) = oar.grad([y.sum()], [x], create_graph=True)
    np.testing.assert_allclose(g.numpy(), [4.0, 0.0, 6.0])
    (gg,) = oar.grad([g.sum()], [x])
    np.testing.assert_allclose(gg.numpy(), [4.0, 0.0, 2.0])


def test_axis_and_repeat_errors():
    x = tensor(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="concat"):
        oar.concat([x, x], axis=2)
    with pytest.raises(ValueError, match="concat"):
        oar.concat([tensor(1.0), tensor(2.0)])
    with pytest.raises(IndexError, match="stack"):
        oar.stack([x, x], axis=3)
    with pytest.raises(IndexError, match="gather"):
        oar.gather(x, I64([0]), axis=2)
    with pytest.raises(ValueError, match="tile"):
        oar.tile(x, [-1, 2])
    with pytest.raises(ValueError, match="unstack"):
        oar.unstack(x, axis=1, num=2)


def test_large_inputs_parallel_paths():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 200))
    idx = rng.integers(-300, 300, 500)
    x = oar.to_tensor(a, stop_gradient=False)
    out = oar.gather(x, I64(idx))
    np.testing.assert_array_equal(out.numpy(), a[idx])
    w = rng.standard_normal((500, 200))
    (out * oar.to_tensor(w)).sum().backward()
    expect = np.zeros_like(a)
    np.add.at(expect, idx, w)
    np.testing.assert_allclose(x.grad.numpy(), expect, atol=1e-12)
    cols = rng.integers(0, 200, 400)
    np.testing.assert_array_equal(oar.gather(oar.to_tensor(a), I64(cols), axis=1).numpy(),
                                  a[:, cols])
    put = oar.index_put(oar.to_tensor(a), [I64(idx), I64(cols[:1])], oar.to_tensor(w[:, 0]),
                        accumulate=True)
    expect = a.copy()
    np.add.at(expect, (idx, cols[:1]), w[:, 0])
    np.testing.assert_allclose(put.numpy(), expect, atol=1e-12)
    big = rng.standard_normal((64, 40, 30))
    t = oar.tile(oar.to_tensor(big), [2, 1, 3])
    np.testing.assert_array_equal(t.numpy(), np.tile(big, [2, 1, 3]))
    sc = oar.slice_scatter(oar.to_tensor(big), oar.to_tensor(big[:, ::2, :1]), [1, 2], [0, 0],
                           [40, 1], [2, 1])
    np.testing.assert_array_equal(sc.numpy(), big)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64", "complex128"])
def test_short_rows_joined_and_split(dtype, threads):
    """Rows of one element (stack and unstack along the last axis) and of a few bytes around
    the inline copy's 64 (concat and split along the last axis) go element by element, the
    longer ones through memcpy; sizes large enough to split over the pool at two threads."""
    rng = np.random.default_rng(1)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        def arr(*shape):
            a = rng.standard_normal(shape) * 50
            return (a + 1j * a[::-1] if dtype.startswith("complex") else a).astype(dtype)
        a, b, c = arr(300, 70, 9), arr(300, 70, 9), arr(300, 70, 9)
        st = oar.stack([oar.to_tensor(v) for v in (a, b, c)], -1)
        np.testing.assert_array_equal(st.numpy(), np.stack([a, b, c], -1))
        for got, want in zip(oar.unstack(st, -1), (a, b, c)):
            np.testing.assert_array_equal(got.numpy(), want)
        parts = [arr(2000, w) for w in (1, 3, 7, 8, 9, 15, 16, 17, 40)]
        cat = oar.concat([oar.to_tensor(p) for p in parts], -1)
        np.testing.assert_array_equal(cat.numpy(), np.concatenate(parts, -1))
        widths = [p.shape[1] for p in parts]
        for got, want in zip(oar.split(cat, widths, -1), parts):
            np.testing.assert_array_equal(got.numpy(), want)
    finally:
        oar.set_num_threads(prev)


def test_concat_many_and_large():
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((64, k, 33)) for k in (1, 7, 300)]
    out = oar.concat([oar.to_tensor(a) for a in arrs], axis=1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(arrs, 1))
    # strided (non-contiguous) inputs
    t = oar.to_tensor(arrs[1]).transpose([2, 1, 0])
    np.testing.assert_array_equal(oar.concat([t, t], 0).numpy(),
                                  np.concatenate([arrs[1].transpose(2, 1, 0)] * 2, 0))
