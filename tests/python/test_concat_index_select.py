"""concat and index_select (phi_kernels/cpu/concat_split_kernels.cc, gather_scatter_kernels.cc)
against float64 NumPy: many, odd-sized, 0-size, strided and mixed-width inputs on every axis,
negative and out-of-range indices; every case at 1 and 2 threads of Oar's pool (the
`threads` fixture), where the work is split into chunks differently."""
import numpy as np
import pytest

import oar

RNG = np.random.default_rng(31)

# (shapes of the inputs, axis): widths differ along the axis; the other dims agree.
CONCAT_CASES = [
    ([(3, 5, 7)] * 2, 0), ([(3, 5, 7), (1, 5, 7), (4, 5, 7)], 0),
    ([(3, 2, 7), (3, 9, 7), (3, 1, 7)], 1), ([(3, 5, 1), (3, 5, 6), (3, 5, 13)], 2),
    ([(3, 5, 4), (3, 5, 2)], -1), ([(2, 3), (2, 0), (2, 5)], 1), ([(0, 4), (0, 4)], 0),
    ([(0, 4), (3, 4)], 0), ([(7,)] * 11, 0), ([(1, 1)] * 40, 1),
    # big enough to split over threads (above the parallel grain), odd widths
    ([(257, 1031), (257, 5), (257, 333)], 1), ([(129, 300), (2, 300), (1, 300)], 0),
    ([(33, 65, 17), (33, 1, 17)], 1),
]


def _case_id(case):
    shapes, axis = case
    return f"{len(shapes)}x{shapes[0]}..axis{axis}"


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("case", CONCAT_CASES, ids=_case_id)
def test_concat_matches_numpy(threads, case):
    shapes, axis = case
    arrays = [RNG.standard_normal(s) for s in shapes]
    out = oar.concat([oar.to_tensor(a.astype(np.float32)) for a in arrays], axis)
    ref = np.concatenate(arrays, axis)
    assert tuple(out.shape) == ref.shape
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_strided_inputs(threads, axis):
    # transposed and step-sliced views: the kernel must read them through their strides
    base = RNG.standard_normal((40, 30, 50))
    a = oar.to_tensor(base.astype(np.float32))
    dims = [10, 12, 14]
    views, refs = [], []
    for width, (t, r) in zip((3, 11, 1), [
            (a.transpose([2, 1, 0]), base.transpose(2, 1, 0)),
            (a[::2, :, ::3].transpose([1, 0, 2]), base[::2, :, ::3].transpose(1, 0, 2)),
            (a[1:, ::-1][:, :, 5:], base[1:, ::-1][:, :, 5:])]):
        cut = tuple(slice(0, width if d == axis else dims[d]) for d in range(3))
        views.append(t[cut])
        refs.append(r[cut])
    out = oar.concat(views, axis)
    np.testing.assert_allclose(out.numpy().astype(np.float64), np.concatenate(refs, axis),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "float16"])
def test_concat_dtypes_exact(threads, dtype):
    arrays = [(RNG.standard_normal((65, s)) * 100).astype(dtype) for s in (3, 600, 1)]
    out = oar.concat([oar.to_tensor(a) for a in arrays], 1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(arrays, 1))


def test_concat_bad_input_names_op():
    x = oar.to_tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(Exception, match="concat"):
        oar.concat([x, oar.to_tensor(np.zeros((2, 3), np.float64))], 0)
    with pytest.raises(Exception, match="concat"):
        oar.concat([x, oar.to_tensor(np.zeros((3, 4), np.float32))], 0)
    with pytest.raises(Exception, match="concat"):
        oar.concat([x, x], 2)


# (table shape, axis, index values): negative values count from the end.
INDEX_CASES = [
    ((7, 5), 0, [0, 6, -1, -7, 3, 3]), ((7, 5), 1, [4, -5, 0]), ((7, 5), -1, [2]),
    ((3, 4, 6), 1, [3, 0, -2, 1]), ((3, 4, 6), 2, [5, 5, -6]), ((3, 4, 6), 0, []),
    ((0, 4), 1, [1, 3]), ((5,), 0, [-1, 0, 4, 2]),
    # above the parallel grain: rows over threads, single elements over threads
    ((8193, 33), 0, list(RNG.integers(-8193, 8193, 3001))),
    ((40, 2000), 1, list(RNG.integers(-2000, 2000, 999))),
]


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("case", INDEX_CASES, ids=lambda c: f"{c[0]}axis{c[1]}n{len(c[2])}")
def test_index_select_matches_numpy(threads, index_dtype, case):
    shape, axis, idx = case
    x = RNG.standard_normal(shape)
    idx = np.asarray(idx, dtype=index_dtype)
    out = oar.index_select(oar.to_tensor(x.astype(np.float32)), oar.to_tensor(idx), axis)
    ref = np.take(x, idx, axis=axis)
    assert tuple(out.shape) == ref.shape
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
def test_index_select_strided_table(threads):
    base = RNG.standard_normal((60, 50))
    view = oar.to_tensor(base.astype(np.float32)).transpose([1, 0])[::2]  # (25, 60), strided
    idx = np.array([24, -25, 3, 3, 10])
    out = oar.index_select(view, oar.to_tensor(idx), 0)
    np.testing.assert_allclose(out.numpy().astype(np.float64), base.T[::2][idx],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("bad", [7, -8, 100, -100])
def test_index_select_out_of_range_raises(threads, bad):
    x = oar.to_tensor(np.zeros((7, 3), np.float32))
    idx = np.zeros(50000, np.int64)  # a large index: the range check must still see `bad`
    idx[40000] = bad
    with pytest.raises(IndexError, match=rf"index_select: index {bad} is out of range"):
        oar.index_select(x, oar.to_tensor(idx), 0)


def test_results_equal_at_1_and_2_threads():
    old = oar.get_num_threads()
    x = oar.to_tensor(RNG.standard_normal((513, 300)).astype(np.float32))
    idx = oar.to_tensor(RNG.integers(-513, 513, 4001))
    outs = []
    try:
        for n in (1, 2):
            oar.set_num_threads(n)
            outs.append((oar.concat([x, x[:, :7], x[:, 5:]], 1).numpy(),
                         oar.index_select(x, idx, 0).numpy()))
    finally:
        oar.set_num_threads(old)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
