"""Tensor.__getitem__ / __setitem__ (python/oar/_indexing.py) against NumPy: a table of
index expressions for get and set, gradients through both, views sharing memory, errors."""
import numpy as np
import pytest

import oar

SHAPE = (4, 3, 5)
RNG = np.random.default_rng(7)
BASE = RNG.standard_normal(SHAPE)
M2 = BASE[0] > 0                      # bool mask over dims 1, 2
M3 = BASE > 0.3                       # full-shape mask

# Each entry is an index as NumPy sees it; the test passes it to oar as is and, for
# list/array parts, also as oar Tensors.
INDICES = [
    0, -1, 3, slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    slice(-2, None), slice(3, 0, -2), slice(10, 20), slice(-100, 100), slice(2, 2),
    (1, 2), (1, 2, 3), (-1, slice(None), -2), (slice(1, None), slice(None, 2)),
    (slice(None), slice(None, None, -2), slice(1, 4, 2)), Ellipsis, (Ellipsis, 1),
    (1, Ellipsis), (0, Ellipsis, slice(None, None, -1)), None, (None, 1), (slice(None), None, 1),
    (1, None, slice(None), None), (Ellipsis, None), (), (0, 0, 0, None),
    [2, 0], [[0, 1], [3, 2]], [-1, 0, -1], (slice(None), [2, 0, 2]),
    (Ellipsis, [4, 0]), ([0, 3], [1, 2]), ([0, 3], slice(None), [1, 2]),
    ([[0], [3]], [1, 2]), (1, [0, 2], slice(1, 3)), (slice(None), 1, [0, 4]),
    (1, slice(None), [0, 4]), ([1, 2], None, [0, 1]), (slice(1, 3), [2, 0], [4, 4]),
    (None, [1, 0]), np.array([1, 1]), M3, (1, M2), (slice(None), M2), (M3[:, :, 0],),
    (M3[:, :, 0], 2), (slice(None, None, -1), M2), ([True, False, True, True],),
    np.array([], dtype=np.int64), (slice(None), []),
]


def _ids(v):
    return repr(v).replace(" ", "")[:60]


def _as_tensor_index(idx):
    """The same index with lists/arrays turned into oar Tensors."""
    def conv(i):
        if isinstance(i, (list, np.ndarray)):
            a = np.asarray(i)
            if a.dtype != np.bool_:
                a = a.astype(np.int64)
            return oar.to_tensor(a)
        return i
    return tuple(conv(i) for i in idx) if isinstance(idx, tuple) else conv(idx)


@pytest.mark.parametrize("idx", INDICES, ids=_ids)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_getitem(idx, dtype):
    a = (BASE * 10).astype(dtype)
    x = oar.to_tensor(a)
    expected = a[idx]
    for index in (idx, _as_tensor_index(idx)):
        out = x[index]
        assert out.dtype.name == dtype
        assert out.shape == list(expected.shape), f"{idx}: {out.shape} vs {expected.shape}"
        np.testing.assert_array_equal(out.numpy(), expected)


def _adjoint(idx, w):
    """d sum(x[idx] * w) / dx for NumPy indexing (positions may repeat)."""
    n = BASE.size
    pos = np.arange(n).reshape(SHAPE)[idx]
    return np.bincount(pos.ravel(), weights=w.ravel(), minlength=n).reshape(SHAPE)


@pytest.mark.parametrize("idx", INDICES, ids=_ids)
def test_getitem_grad(idx):
    x = oar.to_tensor(BASE, stop_gradient=False)
    out = x[_as_tensor_index(idx)]
    w = RNG.standard_normal(out.shape)
    (out * oar.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _adjoint(idx, w), atol=1e-12)


# (index, value): values are scalars, arrays of the indexed shape or broadcastable ones.
SET_CASES = [
    (0, 5.0), (-1, np.arange(5.0)), (slice(1, 3), np.ones((2, 1, 5))),
    ((1, 2), np.arange(5.0)), ((slice(None), 0, slice(None, None, 2)), np.arange(3.0)),
    ((slice(None, None, -1), 1), np.arange(20.0).reshape(4, 5)),
    ((Ellipsis, -1), 7), ((None, 1), np.ones((1, 1, 5))), ((1, None, 2), 3.0),
    (slice(3, 0, -2), np.ones((1, 3, 5))), ((), 0.5), (Ellipsis, np.arange(5.0)),
    ([0, 2], -1.0), ([2, 0], np.arange(15.0).reshape(3, 5)), ([-1, 0], np.ones((2, 1, 1))),
    ((slice(None), [2, 0]), np.arange(5.0)), (([0, 3], [1, 2]), np.array([[1.0], [2.0]])),
    (([0, 3], slice(None), [1, 2]), np.arange(3.0)), ((1, [0, 2], slice(1, 3)), 9.0),
    ((slice(1, 3), [2, 0], [4, 4]), np.array([1.0, 2.0])), (M3, 0.0),
    (M3, np.arange(float(M3.sum()))), ((1, M2), -2.0), ((slice(None), M2), 4.0),
    ((M3[:, :, 0],), np.arange(5.0)), ((slice(None), 1, [0, 4]), np.ones((4, 2))),
    ((None, [1, 0]), 3.0), (([True, False, True, True],), 1.5),
]


def _np_set(idx, value):
    out = BASE.copy()
    out[idx] = value
    return out


@pytest.mark.parametrize("idx,value", SET_CASES, ids=lambda v: _ids(v))
def test_setitem(idx, value):
    expected = _np_set(idx, value)
    values = [value, oar.to_tensor(np.asarray(value, dtype=np.float64))]
    if isinstance(value, np.ndarray):
        values.append(value.tolist())
    for index in (idx, _as_tensor_index(idx)):
        for v in values:
            x = oar.to_tensor(BASE.copy())
            x[index] = v
            np.testing.assert_array_equal(x.numpy(), expected)


@pytest.mark.parametrize("idx,value", SET_CASES, ids=lambda v: _ids(v))
def test_setitem_autograd(idx, value):
    """x[idx] = v on a non-leaf: v gets the (summed) gradient of its positions, x's
    history gets zeros there."""
    leaf = oar.to_tensor(BASE, stop_gradient=False)
    v = oar.to_tensor(np.asarray(value, dtype=np.float64), stop_gradient=False)
    x = leaf * 1.0
    x[_as_tensor_index(idx)] = v
    np.testing.assert_array_equal(x.numpy(), _np_set(idx, value))
    w = RNG.standard_normal(SHAPE)
    (x * oar.to_tensor(w)).sum().backward()
    pos = np.arange(BASE.size).reshape(SHAPE)[idx]
    written = np.zeros(BASE.size, bool)
    written[pos.ravel()] = True
    np.testing.assert_allclose(leaf.grad.numpy(), np.where(written.reshape(SHAPE), 0.0, w),
                               atol=1e-12)
    # d/dv: w at the target positions, summed over v's broadcast dims
    wv = w.ravel()[pos]
    vshape = np.shape(value)
    extra = wv.ndim - len(vshape)
    if extra > 0:
        wv = wv.sum(tuple(range(extra)))
    elif extra < 0:
        wv = wv.reshape((1,) * -extra + wv.shape)
    axes = tuple(i for i, d in enumerate(vshape) if d == 1 and wv.shape[i] != 1)
    wv = wv.sum(axes, keepdims=True)
    np.testing.assert_allclose(v.grad.numpy(), wv.reshape(vshape), atol=1e-12)


def test_setitem_casts_value_and_keeps_dtype():
    x = oar.to_tensor(np.zeros((2, 3), dtype=np.int64))
    x[0] = 2.7
    x[1, 1:] = oar.to_tensor(np.array([1.5, -3.0], dtype=np.float32))
    assert x.dtype == oar.int64
    np.testing.assert_array_equal(x.numpy(), [[2, 2, 2], [0, 1, -3]])
    b = oar.to_tensor(np.zeros(3, dtype=bool))
    b[1] = True
    assert b.numpy().tolist() == [False, True, False]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_scalar_writes_into_large_views_fill(dtype, threads):
    """A Python scalar written into 4096 elements or more (setitem, fill_, zero_) is one value
    broadcast, so the copy is a fill (unit-stride rows: vector stores; stepped rows: a loop):
    the region gets the value cast as a tensor of the dtype would hold it, the rest of the
    tensor is untouched."""
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        rng = np.random.default_rng(2)
        a = (rng.standard_normal((16, 40, 70)) * 10).astype(dtype)
        for idx, value in [(np.s_[:, 3:30], 2.75), (np.s_[2:9, :, ::3], 1), (np.s_[..., 5:], True),
                           (np.s_[:], -3.5), (np.s_[4], 0)]:
            t = oar.to_tensor(a)
            t[idx] = value
            want = a.copy()
            want[idx] = np.array(value).astype(dtype)
            np.testing.assert_array_equal(t.numpy(), want, err_msg=str(idx))
        t = oar.to_tensor(a)
        v = t[:, 1:39, 2:]
        v.fill_(7)
        want = a.copy()
        want[:, 1:39, 2:] = np.array(7).astype(dtype)
        np.testing.assert_array_equal(t.numpy(), want)
        t.zero_()
        assert not t.numpy().any()
    finally:
        oar.set_num_threads(prev)


def test_views_share_memory():
    x = oar.to_tensor(np.arange(12.0).reshape(3, 4))
    y = x[1:]
    y[0] = -1.0
    assert x.numpy()[1].tolist() == [-1.0] * 4
    x[2, ::2] = 100.0
    assert y.numpy()[1].tolist() == [100.0, 9.0, 100.0, 11.0]
    row = x[0]
    assert row._share_storage_with(x) and x[:, 1]._share_storage_with(x)
    assert x[None, ..., 0]._share_storage_with(x)
    assert not x[[0, 1]]._share_storage_with(x)  # advanced indexing copies
    x[0] += 1  # getitem view, in-place add, setitem of the view onto itself
    assert x.numpy()[0].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_setitem_overlapping_value():
    a = np.arange(6.0)
    x = oar.to_tensor(a.copy())
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("dst,src", [
    ((slice(None), slice(0, 4)), (slice(None), slice(4, 8))),      # apart: written directly
    ((slice(None), slice(1, None)), (slice(None), slice(0, -1))),  # shifted by one column
    ((slice(0, None, 2),), (slice(1, None, 2),)),                  # even rows from odd ones
    ((slice(None), slice(0, None, 2)), (slice(None), slice(1, None, 2))),
    ((slice(1, None), slice(0, None, 2)), (slice(0, -1), slice(1, None, 2))),
    ((slice(None, None, -1),), (slice(None),)),                    # a reversed copy of itself
    ((slice(0, 3), slice(2, 6)), (slice(3, 6), slice(0, 4))),
])
def test_setitem_from_the_same_tensor(dst, src):
    """A value that is a view of x is copied first only when it overlaps the written
    region; either way the result is NumPy's with the value read before the write."""
    a = np.arange(48.0).reshape(6, 8)
    x = oar.to_tensor(a.copy())
    x[dst] = x[src]
    a[dst] = a[src].copy()
    np.testing.assert_array_equal(x.numpy(), a)


def _views(base, rng):
    """A random basic-indexing view of base (steps of either sign, selects, transposes)."""
    v = base
    for _ in range(rng.integers(1, 4)):
        r = rng.integers(0, 4)
        if r == 0 and v.ndim:
            ax = int(rng.integers(0, v.ndim))
            n = v.shape[ax]
            lo, hi = sorted(rng.integers(0, n + 1, 2))
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            idx = [slice(None)] * v.ndim
            idx[ax] = slice(lo, hi, step) if step > 0 else slice(hi - 1 if hi else None, lo - 1 if lo else None, step)
            v = v[tuple(idx)]
        elif r == 1 and v.ndim > 1 and v.shape[0] > 0:
            v = v[int(rng.integers(0, v.shape[0]))]
        elif r == 2 and v.ndim > 1:
            v = v.transpose(list(rng.permutation(v.ndim)))
    return v


@pytest.mark.parametrize("seed", range(6))
def test_may_overlap_never_misses_a_shared_element(seed):
    """Tensor._may_overlap against the element sets of random view pairs of one tensor: no
    false "apart" ever; and exact for two slices of one tensor with the same steps."""
    rng = np.random.default_rng(seed)
    base = oar.to_tensor(np.arange(4 * 6 * 10.0).reshape(4, 6, 10))
    exact = 0
    for _ in range(400):
        if rng.random() < 0.5:
            u, w = _views(base, rng), _views(base, rng)
        else:  # two slices of one shape with one set of steps
            steps = [int(rng.choice([1, 2, 3])) for _ in range(3)]
            sizes = [int(rng.integers(1, (n - 1) // s + 2)) for n, s in zip(base.shape, steps)]

            def cut():
                return base[tuple(slice(b, b + (m - 1) * s + 1, s) for b, m, s in zip(
                    (int(rng.integers(0, n - (m - 1) * s)) for n, m, s in zip(base.shape, sizes, steps)),
                    sizes, steps))]
            u, w = cut(), cut()
            exact += 1
        shared = bool(set(u.numpy().ravel().tolist()) & set(w.numpy().ravel().tolist()))
        got = u._may_overlap(w)
        assert got or not shared, (u.shape, u.strides, w.shape, w.strides)
        assert got == w._may_overlap(u)
        if u.strides == w.strides and u.ndim == 3:
            assert got == shared, (u.shape, u.strides, w.shape, w.strides)
    assert exact > 100
    assert not base._may_overlap(oar.to_tensor(np.arange(3.0)))
    assert not base[0:0]._may_overlap(base)


def test_setitem_leaf_requiring_grad_raises():
    x = oar.to_tensor(np.zeros(3), stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="leaf"):
        x[[0, 1]] = 1.0
    with oar.no_grad():
        x[0] = 1.0
    assert x.numpy().tolist() == [1.0, 0.0, 0.0]


def test_setitem_value_requires_grad_into_plain_tensor():
    buf = oar.to_tensor(np.zeros((2, 3)))
    w = oar.to_tensor(np.array([1.0, 2.0, 3.0]), stop_gradient=False)
    buf[1] = w * 2
    assert not buf.stop_gradient
    buf.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_getitem_double_backward():
    x = oar.to_tensor(np.array([1.0, 2.0, 3.0]), stop_gradient=False)
    y = (x[1:] ** 3).sum() + (x[[0, 0]] ** 2).sum()
    (g,) = oar.grad([y], [x], create_graph=True)
    np.testing.assert_allclose(g.numpy(), [4.0, 12.0, 27.0])
    (gg,) = oar.grad([g.sum()], [x])
    np.testing.assert_allclose(gg.numpy(), [4.0, 12.0, 18.0])


def test_zero_size():
    x = oar.to_tensor(np.zeros((0, 3)))
    assert x[:, 1].shape == [0] and x[1:].shape == [0, 3] and x[[]].shape == [0, 3]
    x[:, 1] = 5.0
    y = oar.to_tensor(np.zeros((2, 3)))
    y[1:1] = 5.0
    assert y.numpy().sum() == 0
    assert y[y > 1].shape == [0]


@pytest.mark.parametrize("idx,exc,msg", [
    (3, IndexError, "out of bounds"), (-4, IndexError, "out of bounds"),
    ((0, 5), IndexError, "out of bounds"), ((0, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, 0, Ellipsis), IndexError, "ellipsis"), (1.5, TypeError, "index"),
    ("a", TypeError, "index"), ([3], IndexError, "out of range"),
    (([0], [3]), IndexError, "out of range"), (([0, 1], [0, 1, 2]), ValueError, "broadcast"),
    (slice(None, None, 0), ValueError, "step"), (np.array([True, False]), IndexError, "bool"),
    ([0.5], TypeError, "int or bool"),
])
def test_getitem_errors(idx, exc, msg):
    x = oar.to_tensor(np.zeros((3, 3)))
    with pytest.raises(exc, match=msg):
        x[idx]
    if exc is not TypeError:
        with pytest.raises(exc):
            x[idx] = 1.0


def test_setitem_errors():
    x = oar.to_tensor(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="broadcast"):
        x[0] = np.ones(3)
    with pytest.raises(ValueError, match="broadcast"):
        x[:2] = np.ones((3, 4))
    with pytest.raises(ValueError, match="broadcast"):
        x[[0, 1]] = np.ones((3, 4))
    with pytest.raises(ValueError, match="broadcast"):
        x[x > 0] = np.ones(2)  # no element selected: a 2-vector cannot fill 0 slots
    with pytest.raises(TypeError, match="int or bool"):
        x[oar.to_tensor([0.0])]
    with pytest.raises(IndexError):
        oar.to_tensor(1.0)[0]
