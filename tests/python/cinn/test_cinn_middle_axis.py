"""Reductions over middle axes (Note [Column reductions], LoopKernel::col_outer):
sum/max/min/mean of [a, b, c] over axis 1 (or of [a, b, d, c] over axes 1, 2) join their
elementwise producers' group: each index of the kept leading axes reduces its own run of
rows in blocks, combined in block order. Against float64 NumPy and the unfused program,
keepdim, NaN as the kernels, 0-size shapes, bit-equal at 1 and 2 threads; every kernel's
CUDA C is compiled by NVRTC (cinn_env)."""

import numpy as np
import pytest

import oar
from oar import _C



OPS = {"sum": (oar.sum, np.sum), "max": (oar.max, np.max), "min": (oar.min, np.min), "mean": (oar.mean, np.mean)}


def middle(x):
    return list(range(1, len(x.shape) - 1))


def model(op):
    f = OPS[op][0]

    def fn(x, w):
        y = x * w + 1.0
        return f(y, axis=middle(x)), f(x, axis=middle(x), keepdim=True), y * 2.0

    return fn


def model_np(op, x, w):
    f = OPS[op][1]
    ax = tuple(range(1, x.ndim - 1))
    y = x * w + 1.0
    return f(y, axis=ax), f(x, axis=ax, keepdims=True), y * 2.0


def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


SHAPES = [(3, 5, 7), (2, 130, 67), (4, 2, 3, 37), (5, 1, 9), (1, 70, 3)]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
def test_middle_axis_reductions_fuse_and_equal_numpy_and_the_unfused_program(op, shape, dtype, tol):
    rng = np.random.default_rng(len(op))
    xn, wn = rng.standard_normal(shape) * 3, rng.standard_normal(shape[-1])
    x, w = (oar.to_tensor(a.astype(dtype)) for a in (xn, wn))
    fn = model(op)
    fused, plain = oar.jit.to_static(fn, backend="CINN"), oar.jit.to_static(fn)
    got, ref = fused(x, w), plain(x, w)
    want = model_np(op, *(a.astype(dtype).astype("float64") for a in (xn, wn)))
    for a, b, c in zip(got, ref, want):
        assert a.shape == b.shape == list(c.shape)
        np.testing.assert_allclose(a.numpy(), c, rtol=tol * 10, atol=tol * 10 * np.sqrt(shape[1]))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol * 10, atol=tol * 10 * np.sqrt(shape[1]))
    text = executed(fused)
    assert "kernel.compiled_kernel" in text, text
    assert f'"pd_op.{op}"' not in text, text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_propagates_like_the_kernel(op):
    xn = np.random.default_rng(5).standard_normal((3, 200, 9))
    xn[0, 150, 3] = np.nan
    xn[2, 3, 5] = np.nan
    x, w = oar.to_tensor(xn.astype("float32")), oar.ones([9])
    fn = model(op)
    got, want = oar.jit.to_static(fn, backend="CINN")(x, w), fn(x, w)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    nan = np.isnan(got[0].numpy())
    assert nan[0, 3] and nan[2, 5] and nan.sum() == 2


def test_zero_size_shapes_as_the_kernels():
    w = oar.ones([5])
    for shape in [(0, 4, 5), (3, 0, 5)]:
        x = oar.zeros(list(shape))
        got, want = oar.jit.to_static(model("sum"), backend="CINN")(x, w), model("sum")(x, w)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    got = oar.jit.to_static(model("mean"), backend="CINN")(oar.zeros([3, 0, 5]), w)
    assert got[0].shape == [3, 5] and np.isnan(got[0].numpy()).all()
    with pytest.raises(Exception, match="max"):
        oar.jit.to_static(model("max"), backend="CINN")(oar.zeros([3, 0, 5]), w)


def test_dynamic_batch_one_kernel_and_bit_equal_at_one_and_two_threads():
    def f(x):
        y = oar.exp(x * 0.5)
        return oar.sum(y, axis=1), oar.max(y, axis=1), oar.min(y, axis=1), oar.mean(y, axis=1)

    spec = [oar.static.InputSpec([None, None, 40], "float32")]
    fused = oar.jit.to_static(f, input_spec=spec, backend="CINN")
    rng = np.random.default_rng(3)
    old = oar.get_num_threads()
    for shape in [(3, 1000, 40), (1, 77, 40), (8, 300, 40)]:
        x = oar.to_tensor(rng.standard_normal(shape).astype("float32"))
        try:
            oar.set_num_threads(1)
            one = [t.numpy() for t in fused(x)]
            oar.set_num_threads(2)
            two = [t.numpy() for t in fused(x)]
        finally:
            oar.set_num_threads(old)
        for a, b in zip(one, two):
            np.testing.assert_array_equal(a, b)
        y = np.exp(x.numpy().astype("float64") * 0.5)
        for a, b in zip(one, (y.sum(1), y.max(1), y.min(1), y.mean(1))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    text = executed(fused)
    assert text.count("kernel.compiled_kernel") == 1, text
    assert _C.cinn.cache_stats()["compiles"] == 1


def test_a_consumer_of_a_middle_sum_stays_out_of_its_group():
    def f(x):
        s = oar.sum(x * 2.0, axis=1)
        return s * 3.0

    x = oar.randn([4, 6, 5])
    fused = oar.jit.to_static(f, backend="CINN")
    np.testing.assert_allclose(fused(x).numpy(), f(x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_lone_middle_axis_reduction_stays_the_eager_kernel():
    # measured no faster than the eager sum alone (bench/cinn_middle_axis.py): no group
    def f(x):
        return x.sum(axis=1), oar.max(x, axis=1)

    x = oar.randn([4, 6, 5])
    fused = oar.jit.to_static(f, backend="CINN")
    for a, b in zip(fused(x), f(x)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    text = executed(fused)
    assert "kernel.compiled_kernel" not in text and '"pd_op.sum"' in text, text
