"""Reductions (paddle_core/ops/reduce.yaml) against NumPy: axis/keepdim/dtype variants,
gradients, empty inputs and bad axes."""
import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, Gen, OpCase, bools, case_id,
                           check_bad_inputs, check_forward, check_grad, declared_ops, ints,
                           nonzero, normal, tensor)

ALL_FLOATS = FLOAT_DTYPES + NARROW_DTYPES
SHAPES = [[(3, 4, 5)], [(2, 1, 3)], [(0, 4, 5)], [(1, 4, 1)]]
NARROW_SUM_TOL = {"float16": (5e-2, 2e-2), "bfloat16": (3e-1, 3e-2)}
VARIANTS = [  # (suffix, axis, keepdim)
    ("", None, False), ("[axis=1]", 1, False), ("[axis=-1,keepdim]", -1, True),
    ("[axis=(0,2)]", [0, 2], False), ("[axis=(0,2),keepdim]", (0, 2), True),
]


def _axis(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def reduce_cases(name, fn_np, dtypes, shapes=SHAPES, **kw):
    fn = getattr(oar, name)
    cases = []
    for suffix, axis, keepdim in VARIANTS:
        cases.append(OpCase(
            name + suffix, lambda x, axis=axis, keepdim=keepdim: fn(x, axis=axis, keepdim=keepdim),
            lambda x, axis=axis, keepdim=keepdim: fn_np(x, axis=_axis(axis), keepdims=keepdim),
            shapes=shapes, dtypes=dtypes, op=name, **kw))
    return cases


def _arg(fn_np):
    def ref(x, axis=None, keepdim=False, dtype="int64"):
        return fn_np(x, axis=axis, keepdims=keepdim)
    return ref


def _with_nans(r, s):
    a = r.standard_normal(s)
    a[r.random(s) < 0.3] = np.nan
    return a


CASES = [
    *reduce_cases("nansum", np.nansum, ALL_FLOATS, tol=NARROW_SUM_TOL, inputs=[Gen(_with_nans)],
                  grad=False),
    OpCase("nansum[grad]", lambda x: oar.nansum(x, axis=1), lambda x: np.nansum(x, axis=1),
           shapes=SHAPES[:2], op="nansum"),
    OpCase("nansum[dtype=float64]", lambda x: oar.nansum(x, axis=0, dtype="float64"),
           lambda x: np.nansum(x, axis=0), inputs=[Gen(_with_nans)], dtypes=["float32", "float16"],
           out_dtype="float64", op="nansum", grad=False),
    *reduce_cases("sum", np.sum, ALL_FLOATS + INT_DTYPES, tol=NARROW_SUM_TOL, inputs=[normal()],
                  out_dtype=lambda d: "int64" if d == "int32" else d),
    *reduce_cases("mean", np.mean, ALL_FLOATS, tol=NARROW_SUM_TOL, inputs=[normal()]),
    *reduce_cases("prod", np.prod, FLOAT_DTYPES + INT_DTYPES, shapes=SHAPES[1:],
                  inputs=[nonzero(lo=0.5, hi=1.5)]),
    *reduce_cases("max", np.max, ALL_FLOATS + INT_DTYPES, shapes=SHAPES[:2] + SHAPES[3:],
                  inputs=[normal()]),
    *reduce_cases("min", np.min, ALL_FLOATS + INT_DTYPES, shapes=SHAPES[:2] + SHAPES[3:],
                  inputs=[normal()]),
    OpCase("sum[dtype=float64]", lambda x: oar.sum(x, dtype="float64"), np.sum,
           dtypes=["float32", "int32"], out_dtype="float64", op="sum"),
    OpCase("sum[0-D]", lambda x: oar.sum(x, axis=0), lambda x: x, shapes=[[()]], op="sum"),
    OpCase("prod[dtype=float64]", lambda x: oar.prod(x, axis=1, dtype="float64"),
           lambda x: np.prod(x, axis=1), inputs=[nonzero()], out_dtype="float64", op="prod",
           dtypes=["float32", "int64"]),
    # bool multiplies in int64 as sum does (NumPy too); with dtype= in that dtype
    OpCase("prod[bool]", lambda x: oar.prod(x, axis=1), lambda x: np.prod(x, axis=1), inputs=[bools()],
           dtypes=["bool"], out_dtype="int64", op="prod", grad=False, shapes=SHAPES),
    OpCase("prod[bool,dtype=float64]", lambda x: oar.prod(x, dtype="float64"), np.prod, inputs=[bools()],
           dtypes=["bool"], out_dtype="float64", op="prod", grad=False, shapes=SHAPES),
    OpCase("sum_to", lambda x: oar._C.ops.sum_to(x, [1, 4]), lambda x: x.sum(0, keepdims=True),
           inputs=[(3, 4)], shapes=[[(3, 4)], [(0, 4)]]),
    OpCase("sum_to[lead]", lambda x: oar._C.ops.sum_to(x, [3, 1]), lambda x: x.sum((0, 2)).reshape(3, 1),
           inputs=[(2, 3, 4)], op="sum_to",
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))),), ValueError, "sum_to")]),
]
for name, fn_np in (("argmax", np.argmax), ("argmin", np.argmin)):
    fn = getattr(oar, name)
    for suffix, kw in (("", {}), ("[axis=1]", dict(axis=1)), ("[axis=-1,keepdim]",
                       dict(axis=-1, keepdim=True)), ("[keepdim]", dict(keepdim=True))):
        CASES.append(OpCase(name + suffix, lambda x, kw=kw, fn=fn: fn(x, **kw),
                            lambda x, kw=kw, ref=_arg(fn_np): ref(x, **kw),
                            inputs=[ints(-3, 3)], shapes=SHAPES[:2], grad=False,
                            dtypes=ALL_FLOATS + INT_DTYPES, out_dtype="int64", op=name))
    CASES.append(OpCase(name + "[dtype=int32]",
                        lambda x, fn=fn, dtype="int32": fn(x, 0, dtype=dtype),
                        lambda x, fn_np=fn_np, dtype=None: fn_np(x, axis=0), grad=False,
                        out_dtype="int32", op=name,
                        bad_inputs=[(lambda: (tensor(np.ones((0, 3))),), ValueError, "empty"),
                                    (lambda: (tensor([1.0]),), TypeError, "dtype must be int32",
                                     dict(dtype="float32"))]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_every_reduce_op_has_a_case():
    assert declared_ops("reduce.yaml") - {c.name.split("[")[0] for c in CASES} == set()


# ---- dtype rules
@pytest.mark.parametrize("dtype, expected", [("int32", "int64"), ("bool", "int64"),
                                             ("int64", "int64"), ("float16", "float16")])
def test_sum_default_dtype(dtype, expected):
    x = tensor([[1, 0, 1], [1, 1, 0]], dtype)
    out = x.sum()
    assert out.dtype.name == expected and out.shape == []
    assert out.item() == 4


def test_sum_float16_accumulates_in_float32():
    x = tensor(np.full(4096, 1.0), "float16")  # 4096 > 2048: a float16 accumulator stalls
    assert x.sum().item() == 4096.0


def test_sum_of_empty_is_zero_and_mean_is_nan():
    x = tensor(np.ones((0, 3)))
    np.testing.assert_array_equal(x.sum(axis=0).numpy(), [0, 0, 0])
    assert x.sum().item() == 0
    assert np.isnan(x.mean().item())


# ---- max/min gradient: ties share the gradient evenly (Paddle gives each tie all of it)
def test_max_grad_splits_ties():
    x = tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], "float64", stop_gradient=False)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    x.clear_gradient()
    x.min(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 0, 0], [0, 1, 0]])


def test_argmax_picks_first_of_ties_and_nan():
    assert oar.argmax(tensor([1.0, 3.0, 3.0, 0.0])).item() == 1
    assert oar.argmin(tensor([2, 0, 0], "int64")).item() == 1
    assert oar.argmax(tensor([1.0, np.nan, 5.0])).item() == 1
    assert np.isnan(oar.max(tensor([1.0, np.nan, 5.0])).item())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 33, 1000])
def test_arg_extremum_first_occurrence_across_vector_blocks(dtype, n):
    """The first index of the extremum in a contiguous row: ties in and across 8-float
    (4-double) blocks, +0/-0 as equal, the extremum at the last element, whole and per row."""
    rng = np.random.default_rng(n)
    for first in sorted({0, n // 2, n - 1}):
        a = rng.integers(-50, 50, size=n).astype(dtype)
        a[first] = 100
        a[first:][rng.random(n - first) < 0.3] = 100  # later ties
        assert oar.argmax(tensor(a, dtype)).item() == first
        assert oar.argmin(tensor(-a, dtype)).item() == first
    z = np.full(n, -1.0, dtype)
    z[n // 2] = -0.0
    z[n - 1] = 0.0
    assert oar.argmax(tensor(z, dtype)).item() == n // 2
    rows = rng.standard_normal((5, n)).astype(dtype)
    rows[:, n - 1] = rows.max(axis=1)  # a tie with the last element
    np.testing.assert_array_equal(oar.argmax(tensor(rows, dtype), axis=1).numpy(), rows.argmax(1))
    np.testing.assert_array_equal(oar.argmin(tensor(rows, dtype), axis=1).numpy(), rows.argmin(1))


def test_reduce_over_noncontiguous_view():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tensor(a, "float64").transpose([2, 0, 1])
    assert not x.is_contiguous()
    np.testing.assert_allclose(x.sum(axis=[0, 2]).numpy(), a.transpose(2, 0, 1).sum((0, 2)))
    np.testing.assert_allclose(x.max(axis=1).numpy(), a.transpose(2, 0, 1).max(1))
    np.testing.assert_array_equal(oar.argmax(x, axis=2).numpy(), a.transpose(2, 0, 1).argmax(2))


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_dtype_attr_keeps_input_grad_dtype(name):
    x = tensor([1.0, 2.0, 3.0], "float32", stop_gradient=False)
    out = getattr(oar, name)(x, dtype="float64")
    assert out.dtype.name == "float64"
    out.backward()
    assert x.grad.dtype.name == "float32"
    np.testing.assert_allclose(x.grad.numpy(), [1, 1, 1] if name == "sum" else [6, 3, 2])


def test_prod_grad():
    x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float64", stop_gradient=False)
    x.prod(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[6, 3, 2], [30, 24, 20]])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prod_of_long_rows(dtype, threads):
    """Float rows multiplied in vector accumulators (row_prod, reduce_kernels.cc): every row
    length from 0 to 200 (around the 4-vector blocks and their tails), strided input, and zero,
    inf and NaN anywhere in a row, against float64."""
    rng = np.random.default_rng(7)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for n in range(201):
            x = rng.uniform(0.8, 1.25, (3, n))
            if n > 70:
                x[0, n - 3], x[1, 5], x[2, 64] = 0.0, np.inf, np.nan
            got = oar.prod(oar.to_tensor(x.astype(dtype)), axis=1).numpy()
            with np.errstate(invalid="ignore"):
                ref = np.prod(x.astype(dtype).astype(np.float64), axis=1)
            np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == "float32" else 1e-13,
                                       equal_nan=True, err_msg=f"n={n}")
        x = rng.uniform(0.8, 1.25, (40, 300))
        got = oar.prod(oar.to_tensor(x.astype(dtype)).t(), axis=0).numpy()
        np.testing.assert_allclose(got, np.prod(x.astype(dtype).astype(np.float64), axis=1),
                                   rtol=1e-5 if dtype == "float32" else 1e-13)
    finally:
        oar.set_num_threads(prev)


def test_large_sum_is_accurate():
    rng = np.random.default_rng(0)
    a = rng.random(100_000).astype(np.float32)
    np.testing.assert_allclose(tensor(a, "float32").sum().item(), a.astype(np.float64).sum(),
                               rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
@pytest.mark.parametrize("shape,axis", [
    ((1024, 1024), 0),      # several row chunks (Note [Column sums in row order], reduce.h)
    ((3, 700, 37), 1),      # a middle axis, ragged rows, one chunk
    ((2, 2500, 300), 1),    # a middle axis over several chunks per output row
    ((5000, 3), 0), ((40, 9000), 0),  # a few long columns; rows past kColumnSumRows take the blocks
    ((0, 6), 0), ((4, 0, 5), 1),      # an empty reduced axis: zeros
])
def test_column_sums_match_float64(dtype, shape, axis):
    rng = np.random.default_rng(3)
    a = (rng.integers(-50, 50, shape) if dtype == "int32" else rng.standard_normal(shape)).astype(dtype)
    ref = a.astype(np.float64).sum(axis=axis)
    got = tensor(a, dtype).sum(axis=axis).numpy().astype(np.float64)
    rtol, atol = {"float16": (2e-2, 1e-1), "float32": (1e-5, 1e-4)}.get(dtype, (1e-12, 1e-12))
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    if dtype in ("float32", "float64") and shape[axis] > 0:
        np.testing.assert_allclose(tensor(a, dtype).mean(axis=axis).numpy(), ref / shape[axis],
                                   rtol=rtol, atol=atol)


def test_column_sums_do_not_depend_on_the_thread_count():
    a = np.random.default_rng(5).standard_normal((1536, 1000)).astype(np.float32)
    before = oar.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            oar.set_num_threads(n)
            outs.append(tensor(a, "float32").sum(axis=0).numpy())
    finally:
        oar.set_num_threads(before)
    np.testing.assert_array_equal(outs[0], outs[1])


# ---- bad inputs
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
def test_bad_axis_raises_index_error(name):
    with pytest.raises(IndexError, match="axis 3 is out of range"):
        getattr(oar, name)(tensor(np.ones((2, 3))), axis=3)
    with pytest.raises(IndexError, match="axis -3 is out of range"):
        getattr(oar, name)(tensor(np.ones((2, 3))), axis=[0, -3])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_bad_axis(name):
    with pytest.raises(IndexError, match="axis 2 is out of range"):
        getattr(oar, name)(tensor(np.ones((2, 3))), axis=2)


@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
def test_bad_axis_names_the_op(name):
    with pytest.raises(IndexError, match=f"^{name}: "):
        getattr(oar, name)(tensor(np.ones((2, 3))), axis=3)


@pytest.mark.parametrize("name", ["max", "min"])
def test_bad_axis_names_the_op_minmax(name):
    with pytest.raises(IndexError, match=f"^{name}: "):
        getattr(oar, name)(tensor(np.ones((2, 3))), axis=3)


def test_mean_of_int_keeps_its_dtype():
    r = oar.mean(tensor([1, 2], "int64"))  # Paddle 3.3: the int dtype, truncated (1.5 -> 1)
    assert r.dtype == oar.int64 and int(r) == 1


def test_max_of_empty_raises():
    with pytest.raises(ValueError, match="max: cannot reduce over axis 0 of size 0"):
        oar.max(tensor(np.ones((0, 3))), axis=0)


# ---- nansum: NaNs add 0 in the sum's own passes (reduce.h, sum_kernel<..., kSkipNan>)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nansum_every_sum_path(dtype, threads):
    """Each of the sum's loops with NaNs in the vector bodies and the tails: one long row
    (parallel chunks), rows, column sums in row order (one chunk and several), and columns
    wider than their blocks; inf stays inf, an all-NaN slice sums to 0; against float64."""
    rng = np.random.default_rng(8)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2, "bfloat16": 1e-1}[dtype]
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for shape, axis in (((300001,), None), ((37, 1001), 1), ((5, 3, 16, 7), 3),
                            ((640, 33), 0), ((2, 700, 40), 1), ((3, 9000), 0), ((4, 2, 10000), 1)):
            x = rng.standard_normal(shape)
            x[rng.random(shape) < 0.2] = np.nan
            x = x.astype(dtype) if dtype != "bfloat16" else x
            t = tensor(x, dtype)
            ref = np.nansum(t.astype("float32").numpy().astype(np.float64) if dtype == "bfloat16"
                            else x.astype(np.float64), axis=axis)
            got = oar.nansum(t, axis=axis).astype("float64").numpy()
            scale = np.nansum(np.abs(t.astype("float64").numpy()), axis=axis) + 1
            assert np.all(np.abs(got - ref) <= tol * scale), (dtype, shape, axis)
        x = np.array([[np.nan, np.nan, np.nan], [1.0, np.inf, np.nan], [-np.inf, np.nan, 2.0]])
        got = oar.nansum(tensor(x, dtype), axis=1).astype("float64").numpy()
        np.testing.assert_array_equal(got, [0.0, np.inf, -np.inf])
    finally:
        oar.set_num_threads(prev)


def test_nansum_gradient_is_zero_at_nans_and_other_dtypes():
    x = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 3.0]])
    t = tensor(x, "float32", stop_gradient=False)
    oar.nansum(t, axis=0, keepdim=True).backward(tensor([[1.0, 2.0, 3.0]], "float32"))
    np.testing.assert_array_equal(t.grad.numpy(), [[1.0, 0.0, 3.0], [0.0, 0.0, 3.0]])
    # integer inputs sum plainly (int64), an integer dtype= on floats goes through the where
    assert oar.nansum(tensor([[1, 2], [3, 4]], "int32")).numpy() == 10
    got = oar.nansum(tensor([1.5, np.nan, 2.5], "float32"), dtype="int64")
    assert got.dtype.name == "int64" and got.numpy() == 3
    with pytest.raises(ValueError, match="nansum"):
        oar.nansum(tensor([1.0], "float32"), axis=3)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_reductions_of_every_short_length(dtype, threads):
    """Rows of every length from 1 to 80 (reduce.h's VecSum4 and stats_kernels' vec_sum: four
    vectors at a time, then single vectors, then a masked tail; products in row_prod):
    sum, mean, nansum with a NaN in the tail, prod, var, std and the 2-norm against float64.
    The values sit near 1000, so a tail lane padded with anything but a zero deviation would
    show in var."""
    rng = np.random.default_rng(12)
    tol = 1e-5 if dtype == "float32" else 1e-12
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for n in range(1, 81):
            a = (1000 + rng.standard_normal((5, n))).astype(dtype)
            r = a.astype(np.float64)
            t = tensor(a, dtype)
            checks = {
                "sum": (t.sum(axis=1), r.sum(1)), "mean": (t.mean(axis=1), r.mean(1)),
                "norm": (oar.linalg.norm(t, axis=1), np.sqrt((r * r).sum(1))),
                "var": (t.var(axis=1, unbiased=False), r.var(1)),
                "std": (t.std(axis=1, unbiased=False), r.std(1)),
                "prod": (oar.prod(t / 1000, axis=1), (r / 1000).prod(1)),
            }
            for name, (got, want) in checks.items():
                np.testing.assert_allclose(got.numpy(), want, rtol=tol, err_msg=f"{name} n={n}")
            a[:, -1] = np.nan  # in the tail (or the single vectors) of every row
            got = oar.nansum(tensor(a, dtype), axis=1).numpy()
            np.testing.assert_allclose(got, np.nansum(a.astype(np.float64), axis=1), rtol=tol,
                                       err_msg=f"nansum n={n}")
    finally:
        oar.set_num_threads(prev)
