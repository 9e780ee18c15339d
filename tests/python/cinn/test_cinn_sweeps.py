"""Reduction sweeps (Note [Reduction sweeps] in docs/notes/cinn.md): independent
reductions of a group in one pass over the row, LayerNorm's variance in one pass with
its mean (the shifted form), unrolled accumulators, and the inlined float32 exp; each
fused group against a float64 NumPy reference on random inputs."""
import re

import numpy as np
import pytest

import oar
from oar import _C


def compiled(static, cols=2):
    if cols == 1:  # [R, 1]: a reduction's result has the loop space's shape; not fused whole
        return None
    text = str(static.concrete_programs[-1].executed_program)
    assert "kernel.compiled_kernel" in text, text
    assert "pd_op.mean" not in text and "pd_op.sum" not in text and "pd_op.max" not in text, text
    return text


def layer_norm(x, w):
    mu = oar.mean(x, axis=-1, keepdim=True)
    d = x - mu
    var = oar.mean(d * d, axis=-1, keepdim=True)
    return d * oar.rsqrt(var + 1e-5) * w + w


def layer_norm_ref(x, w):
    x = x.astype("float64")
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + w


# Column counts: below one vector, one vector body plus tail, past the 4-vector unroll
# with a remainder of single vectors and a scalar tail; 0 rows.
COLS = [1, 3, 8, 67, 203, 1000]


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_one_pass_layer_norm_equals_float64(cols, dtype, tol, offset):
    # offset: a mean far from 0 (the unshifted one-pass formula would lose every digit).
    rng = np.random.default_rng(cols)
    xn = (rng.standard_normal((9, cols)) + offset).astype(dtype)
    wn = rng.standard_normal(cols).astype(dtype)
    static = oar.jit.to_static(layer_norm, backend="CINN")
    got = static(oar.to_tensor(xn), oar.to_tensor(wn)).numpy()
    compiled(static, cols)
    scale = 1.0 if offset == 0 or dtype == "float64" else 50.0  # x itself holds only ~1e-4 absolute
    np.testing.assert_allclose(got, layer_norm_ref(xn, wn), rtol=tol * scale, atol=tol * scale)


@pytest.mark.parametrize("cols", [8, 37, 1000])
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_one_pass_variance_matches_static_columns(cols, dtype, tol):
    # With C static the decomposed mean is sum * (1/C), a constant: the rewrite matches it
    # too (it used to match only the dynamic form, sum / C at run time).
    rng = np.random.default_rng(cols + 1)
    xn = (rng.standard_normal((6, cols)) + 1e3).astype(dtype)
    wn = rng.standard_normal(cols).astype(dtype)
    static = oar.jit.to_static(layer_norm, backend="CINN")
    got = static(oar.to_tensor(xn), oar.to_tensor(wn)).numpy()
    names = set(re.findall(r'kernel_name = "(cinn_\w+)"', str(static.concrete_programs[-1].executed_program)))
    made = [k for k in _C.cinn.cuda_kernels() if k["name"] in names]
    assert len(made) == 1 and "first(n" in made[0]["loop_kernel"], made
    # The shift keeps float32's digits with a mean of 1000: within 2 units of x's rounding.
    scale = 1.0 if dtype == "float64" else 50.0
    np.testing.assert_allclose(got, layer_norm_ref(xn, wn), rtol=tol * scale, atol=tol * scale)


def test_one_pass_layer_norm_constant_rows_and_zero_rows():
    static = oar.jit.to_static(layer_norm, backend="CINN")
    x = np.full((4, 37), 3.25, "float32")
    w = np.ones(37, "float32")
    got = static(oar.to_tensor(x), oar.to_tensor(w)).numpy()
    np.testing.assert_array_equal(got, np.ones_like(x))  # variance exactly 0, never negative
    empty = static(oar.to_tensor(np.zeros((0, 37), "float32")), oar.to_tensor(w)).numpy()
    assert empty.shape == (0, 37)


def moments(x):
    s = oar.sum(x, axis=-1, keepdim=True)
    q = oar.sum(x * x, axis=-1, keepdim=True)
    mx = oar.max(x, axis=-1, keepdim=True)
    mn = oar.min(x, axis=-1, keepdim=True)
    return s, q, mx - mn, x * (mx - mn) + s


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_independent_reductions_share_a_sweep(cols, dtype, tol):
    rng = np.random.default_rng(cols + 1)
    xn = rng.standard_normal((5, cols)).astype(dtype)
    static = oar.jit.to_static(moments, backend="CINN")
    got = [t.numpy() for t in static(oar.to_tensor(xn))]
    compiled(static, cols)
    x = xn.astype("float64")
    s, q = x.sum(-1, keepdims=True), (x * x).sum(-1, keepdims=True)
    r = x.max(-1, keepdims=True) - x.min(-1, keepdims=True)
    for g, want in zip(got, [s, q, r, x * r + s]):
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol * cols)


def softmax(x):
    e = oar.exp(x - oar.max(x, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def test_inlined_exp_matches_float64_over_its_range():
    # Softmax rows spanning exp's range (underflow to 0 below -87.3) and exp of every
    # special value: inf -> inf, -inf -> 0, NaN -> NaN, overflow past 88.38 -> inf.
    rng = np.random.default_rng(5)
    xn = (rng.uniform(-100, 100, (16, 203))).astype("float32")
    got = oar.jit.to_static(softmax, backend="CINN")(oar.to_tensor(xn)).numpy()
    x = xn.astype("float64")
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-30)

    def ex(x):
        return oar.exp(x) * 1.0 + 0.0

    xs = np.linspace(-90, 90, 4001).astype("float32")
    xs = np.concatenate([xs, np.array([np.inf, -np.inf, np.nan, 88.5, 88.3, -87.0, 0.0], "float32")])
    static = oar.jit.to_static(ex, backend="CINN")
    got = static(oar.to_tensor(xs.reshape(1, -1))).numpy()[0]
    assert "kernel.compiled_kernel" in str(static.concrete_programs[-1].executed_program)
    with np.errstate(over="ignore"):
        want = np.exp(xs.astype("float64")).astype("float32")
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-45)  # subnormals: within 1 ulp (1.4e-45)
    assert np.isnan(got[-5]) and got[-7] == np.inf and got[-6] == 0.0


def many_groups(x, w):
    # Four independent groups (each a reduction with its own consumers, separated by
    # matmuls, which stay library calls), so cinn_lower has four kernels to build.
    a = oar.exp(x - oar.max(x, axis=-1, keepdim=True))
    a = a / oar.sum(a, axis=-1, keepdim=True)
    b = oar.matmul(a, w)
    b = b * oar.rsqrt(oar.mean(b * b, axis=-1, keepdim=True) + 1e-6)
    c = oar.matmul(b, w)
    c = oar.tanh(c) - oar.min(c, axis=-1, keepdim=True)
    d = oar.matmul(c, w)
    return oar.sqrt(oar.abs(d) + oar.sum(d * 0.5, axis=-1, keepdim=True) ** 2)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_parallel_compilation_equals_serial(threads):
    rng = np.random.default_rng(7)
    x = oar.to_tensor(rng.standard_normal((6, 40)).astype("float32"))
    w = oar.to_tensor((rng.standard_normal((40, 40)) * 0.2).astype("float32"))
    old = oar.get_flags(["FLAGS_cinn_compile_thread_num"])
    oar.set_flags({"FLAGS_cinn_compile_thread_num": threads})
    try:
        static = oar.jit.to_static(many_groups, backend="CINN")
        got = static(x, w).numpy()
    finally:
        oar.set_flags(old)
    text = str(static.concrete_programs[-1].executed_program)
    assert text.count("kernel.compiled_kernel") == 4, text
    s = _C.cinn.cache_stats()
    assert s["compiles"] == 4 and s["fallbacks"] == 0, s
    assert s["compile_threads"] == (0 if threads == 1 else min(threads, 4)), s
    np.testing.assert_allclose(got, many_groups(x, w).numpy(), rtol=1e-5, atol=1e-5)
    # The same program again: every group from the memory cache, nothing built.
    _C.cinn.reset_cache_stats()
    oar.jit.to_static(many_groups, backend="CINN")(x, w)
    s = _C.cinn.cache_stats()
    assert s["compiles"] == 0 and s["memory_hits"] == 4, s


def test_parallel_compilation_from_the_disk_cache_and_a_failing_group(capfd):
    x = oar.randn([5, 24])
    w = oar.randn([24, 24]) * 0.2
    oar.set_flags({"FLAGS_cinn_compile_thread_num": 3})
    try:
        oar.jit.to_static(many_groups, backend="CINN")(x, w)
        _C.cinn.forget_memory_cache()
        _C.cinn.reset_cache_stats()
        got = oar.jit.to_static(many_groups, backend="CINN")(x, w).numpy()
        s = _C.cinn.cache_stats()
        assert s["disk_hits"] == 4 and s["compiles"] == 0, s
        np.testing.assert_allclose(got, many_groups(x, w).numpy(), rtol=1e-5, atol=1e-5)
        oar.set_flags({"FLAGS_cinn_test_fail_compile": True})
        _C.cinn.reset_cache_stats()
        static = oar.jit.to_static(many_groups, backend="CINN")
        got = static(x, w).numpy()
        assert "compiled_kernel" not in str(static.concrete_programs[-1].executed_program)
        assert _C.cinn.cache_stats()["fallbacks"] == 4
        np.testing.assert_allclose(got, many_groups(x, w).numpy(), rtol=1e-5, atol=1e-5)
    finally:
        oar.set_flags({"FLAGS_cinn_compile_thread_num": -1, "FLAGS_cinn_test_fail_compile": False})


def two_groups(x, y):
    # Independent of each other, both over x's loop space: horizontal fusion makes them
    # one kernel (one pass over x); y's group shares no input and stays its own.
    a = oar.sum(oar.exp(x), axis=-1, keepdim=True)
    b = oar.max(x * x, axis=-1, keepdim=True)
    c = oar.tanh(y) * 2.0
    return a, b, c


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_horizontal_fusion_of_groups_sharing_an_input(dtype, tol):
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((7, 45)).astype(dtype)
    yn = rng.standard_normal((7, 45)).astype(dtype)
    static = oar.jit.to_static(two_groups, backend="CINN")
    a, b, c = (t.numpy() for t in static(oar.to_tensor(xn), oar.to_tensor(yn)))
    text = str(static.concrete_programs[-1].executed_program)
    assert text.count("kernel.compiled_kernel") == 2, text
    assert _C.cinn.cache_stats()["kernels"] == 2
    x, y = xn.astype("float64"), yn.astype("float64")
    np.testing.assert_allclose(a, np.exp(x).sum(-1, keepdims=True), rtol=tol, atol=tol)
    np.testing.assert_allclose(b, (x * x).max(-1, keepdims=True), rtol=tol, atol=tol)
    np.testing.assert_allclose(c, np.tanh(y) * 2.0, rtol=tol, atol=tol)


def norm(x):
    mu = oar.mean(x, axis=-1, keepdim=True)
    d = x - mu
    var = oar.mean(d * d, axis=-1, keepdim=True)
    return d * oar.rsqrt(var + 1e-5)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_one_pass_variance_over_dynamic_columns(dtype, tol):
    # With the column count dynamic, mean stays whole (sum / C at run time), and the
    # variance takes the shifted one-pass form with unary `first` (the row's element at
    # column 0; 0 for an empty row); the CUDA C of the kernel (the fixture compiles it)
    # holds the same form.
    from oar.static import InputSpec

    static = oar.jit.to_static(norm, input_spec=[InputSpec([None, None], dtype)], backend="CINN")
    rng = np.random.default_rng(1)
    for shape, offset in [((5, 37), 1e3), ((3, 1000), 0.0), ((4, 1), 2.0), ((0, 6), 0.0), ((2, 0), 0.0)]:
        xn = (rng.standard_normal(shape) + offset).astype(dtype)
        got = static(oar.to_tensor(xn)).numpy()
        x = xn.astype("float64")
        d = x - x.mean(-1, keepdims=True) if shape[-1] else x
        ref = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) if shape[-1] else x
        scale = 50.0 if offset and dtype == "float32" else 1.0
        np.testing.assert_allclose(got, ref, rtol=tol * scale, atol=tol * scale, err_msg=str(shape))
    names = set(re.findall(r'kernel_name = "(cinn_\w+)"', str(static.concrete_programs[-1].executed_program)))
    made = [k for k in _C.cinn.cuda_kernels() if k["name"] in names]
    assert len(made) == 1 and "first(n" in made[0]["loop_kernel"], made
    assert "if (cols > 0) {" in made[0]["source"] and "dead (reduce_sum)" in made[0]["source"]
