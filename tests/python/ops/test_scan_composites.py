"""cummax / cummin (python/oar/_scan_composites.py) against a NumPy float64 loop: values,
indices (latest on ties, NaN propagating), gradients through the values, bad inputs."""
import numpy as np
import pytest

import oar
from op_test_utils import OpCase, case_id, check_case, ints, run_in_isa_copy, tensor


def np_cum(x, axis, better):
    x = np.moveaxis(np.asarray(x), axis, -1)
    vals, idx = np.empty_like(x), np.zeros(x.shape, np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        row = x[pos]
        for k in range(row.shape[0]):
            if k == 0 or better(row[k], vals[pos][k - 1]) or np.isnan(row[k]):
                vals[pos][k], idx[pos][k] = row[k], k
            else:
                vals[pos][k], idx[pos][k] = vals[pos][k - 1], idx[pos][k - 1]
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


GE, LE = (lambda a, b: a >= b), (lambda a, b: a <= b)
SHAPES = [[(3, 5)], [(2, 0)], [(4, 1)], [(2, 3, 9)]]

CASES = [
    OpCase("cummax", lambda x, *a: oar.cummax(x, *(a or (1,)))[0],
           lambda x: np_cum(x, 1, GE)[0], inputs=[(3, 5)], shapes=SHAPES,
           bad_inputs=[((tensor(np.ones((2, 2))), 2), ValueError, "axis"),
                       ((tensor(np.ones(2)), 0, "float32"), ValueError, "dtype")]),
    OpCase("cummin", lambda x, *a: oar.cummin(x, *(a or (-1,)))[0],
           lambda x: np_cum(x, -1, LE)[0], inputs=[(3, 5)], shapes=SHAPES,
           bad_inputs=[((oar.to_tensor([True]),), TypeError, "bool")]),
    OpCase("cummax_ties", lambda x: oar.cummax(x, 0)[0], lambda x: np_cum(x, 0, GE)[0],
           inputs=[ints(-2, 2, (7, 3))], grad=False, op="cummax"),
    OpCase("cummax_flat", lambda x: oar.cummax(x)[0], lambda x: np_cum(x.ravel(), 0, GE)[0],
           inputs=[(3, 4)], shapes=[[(3, 4)], [()]], op="cummax"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_indices_match_numpy(dtype, axis):
    """Along the last axis (1, -1) the kernel keeps the running extremum in registers."""
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 3, (6, 17)).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(x.shape) < 0.1] = np.nan
    for fn, better in ((oar.cummax, GE), (oar.cummin, LE)):
        v, i = fn(oar.to_tensor(x), axis=axis)
        rv, ri = np_cum(x, axis, better)
        np.testing.assert_array_equal(i.numpy(), ri)
        np.testing.assert_array_equal(v.numpy(), rv)
        assert i.dtype.name == "int64" and v.dtype.name == dtype
    assert oar.cummax(oar.to_tensor(x), 0, dtype="int32")[1].dtype.name == "int32"


def test_tensor_methods_and_gradient_goes_to_index():
    x = oar.to_tensor([1.0, 3.0, 3.0, 2.0], stop_gradient=False)
    v, i = x.cummax()
    assert i.numpy().tolist() == [0, 1, 2, 2]
    v.sum().backward()
    assert x.grad.numpy().tolist() == [1.0, 1.0, 2.0, 0.0]
    assert x.cummin(axis=0)[1].numpy().tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_index_kernel_on_middle_axes(dtype, threads):
    """cum_extremum (the kernel behind the indices): a middle axis of a 3-D tensor (lanes
    walked in row order), ties, NaN runs, split over the pool by the outer dim, the 16-bit
    dtypes; and its own argument checks."""
    rng = np.random.default_rng(8)
    x = rng.integers(-4, 4, (5, 33, 7)).astype("float64")
    if dtype != "int64":
        x[rng.random(x.shape) < 0.05] = np.nan
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        t = oar.to_tensor(x.astype("float32" if dtype != "int64" else "int64")).astype(dtype)
        for fn, better in ((oar.cummax, GE), (oar.cummin, LE)):
            v, i = fn(t, axis=1)
            rv, ri = np_cum(x, 1, better)
            np.testing.assert_array_equal(i.numpy(), ri, err_msg=f"{fn.__name__} {dtype}")
            np.testing.assert_array_equal(v.astype("float64").numpy(), rv, err_msg=f"{fn.__name__} {dtype}")
    finally:
        oar.set_num_threads(prev)
    with pytest.raises(ValueError, match="cum_extremum.*axis"):
        oar._C.ops._cum_extremum(oar.ones([2, 3]), 2, True)
    with pytest.raises(ValueError, match="cum_extremum: x must have rank >= 1"):
        oar._C.ops._cum_extremum(oar.ones([]), 0, True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 31, 32, 33, 47, 100, 1029])
def test_float_rows_scan_bit_for_bit(n, threads):
    """float32 along the last axis runs 16 lanes at a time (Note [Running extrema in
    registers]): every length class around the vector width and its tail, rows without NaN
    (the one-compare path) and rows where a NaN first shows in the first vector, a later one or
    the tail; ties, -0.0 against 0.0, infinities and a row of -inf; NaN payloads and signs kept
    bit for bit, for cummax and cummin."""
    rng = np.random.default_rng(n)
    rows = [rng.integers(-3, 3, n).astype(np.float32),                 # ties everywhere
            rng.standard_normal(n).astype(np.float32),
            np.full(n, -np.inf, np.float32), np.full(n, np.inf, np.float32),
            np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0))]
    for at in sorted({0, n // 3, 16, n - 1} & set(range(n))):   # a NaN first seen at `at`
        r = rng.standard_normal(n).astype(np.float32)
        bits = r.view(np.uint32)
        bits[at] = 0xFFC01234 if at % 2 else 0x7FC0ABCD                # payloads and signs
        if at + 5 < n:
            bits[at + 5] = 0x7FA00001 | 0x00400000
        rows.append(r)
    x = np.stack(rows)
    x[1, rng.random(n) < 0.2] = np.inf
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for fn, better in ((oar.cummax, GE), (oar.cummin, LE)):
            v, i = fn(oar.to_tensor(x), axis=-1)
            rv, ri = np_cum(x, 1, better)
            np.testing.assert_array_equal(i.numpy(), ri, err_msg=fn.__name__)
            np.testing.assert_array_equal(v.numpy().view(np.uint32), rv.view(np.uint32), err_msg=fn.__name__)
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("capability", ["avx2", "avx512"])
def test_float_rows_scan_in_each_isa_copy(capability):
    """The float32 row scan has an AVX2 (8 lanes) and an AVX-512 (16 lanes) form: the test
    above, run in a child forced to each copy this CPU has."""
    run_in_isa_copy(f"{__file__}::test_float_rows_scan_bit_for_bit", capability, 22)
