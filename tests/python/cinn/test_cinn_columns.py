"""Column reductions and backward decompositions (docs/notes/cinn.md, Note [Column
reductions]): sums over every axis but the last (a bias's or a norm weight's gradient)
join their elementwise producers' group and come out of the same kernel; gelu_grad
decomposes, so a backward program fuses it with the bias gradient. Each against float64
NumPy and against the unfused program, the fallback, and independence from the thread
count."""

import numpy as np
import pytest

import oar
from oar import _C


# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_cinn_test_fail_compile", "FLAGS_enable_cinn_accuracy_check"]


def bias_and_weight_grads(g, y, w):
    # LayerNorm's weight and bias gradients: a full output and two column sums of one pass.
    lead = list(range(len(g.shape) - 1))
    gx = g * w
    return gx, oar.sum(g * y, axis=lead), oar.sum(g, axis=lead, keepdim=True)


def bias_and_weight_grads_np(g, y, w):
    lead = tuple(range(g.ndim - 1))
    return g * w, (g * y).sum(axis=lead), g.sum(axis=lead, keepdims=True)


def executed(static_fn, backward=False):
    cp = static_fn.concrete_programs[-1]
    return str(cp.executed_backward_program if backward else cp.executed_program)


# [130, 67]: three blocks of 64 rows and a vector tail; [0, 5]: no rows (the sums are 0);
# one static row: a keepdim column sum has the space's dims (it runs unfused, still right).
SHAPES = [(6, 300), (130, 67), (3, 2, 37), (1, 7), (1, 1), (0, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
def test_column_sums_fuse_and_equal_numpy_and_the_unfused_program(shape, dtype, tol):
    rng = np.random.default_rng(0)
    gn, yn = rng.standard_normal(shape), rng.standard_normal(shape) * 3 + 1
    wn = rng.standard_normal(shape[-1])
    g, y, w = (oar.to_tensor(a.astype(dtype)) for a in (gn, yn, wn))
    fused = oar.jit.to_static(bias_and_weight_grads, backend="CINN")
    plain = oar.jit.to_static(bias_and_weight_grads)
    got, ref = fused(g, y, w), plain(g, y, w)
    want = bias_and_weight_grads_np(*(a.astype(dtype).astype("float64") for a in (gn, yn, wn)))
    for a, b, c in zip(got, ref, want):
        assert a.shape == b.shape == list(c.shape)
        np.testing.assert_allclose(a.numpy(), c, rtol=tol, atol=tol * max(1, shape[0]))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol * max(1, shape[0]))
    text = executed(fused)
    if shape[0] > 1:
        assert "kernel.compiled_kernel" in text, text
        assert '"pd_op.sum"' not in text, text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


def test_column_sums_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(1)
    g, y = oar.to_tensor(rng.standard_normal((1000, 96)).astype("float32")), oar.to_tensor(
        rng.standard_normal((1000, 96)).astype("float32"))
    w = oar.to_tensor(rng.standard_normal(96).astype("float32"))
    fused = oar.jit.to_static(bias_and_weight_grads, backend="CINN")
    old = oar.get_num_threads() if hasattr(oar, "get_num_threads") else None
    try:
        oar.set_num_threads(1)
        one = [t.numpy() for t in fused(g, y, w)]
        oar.set_num_threads(2)
        two = [t.numpy() for t in fused(g, y, w)]
    finally:
        if old is not None:
            oar.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    # Blocked sums: well within float32's rounding of a 1000-term sequential sum.
    want = (g.numpy().astype("float64") * y.numpy()).sum(0)
    np.testing.assert_allclose(one[1], want, rtol=1e-5, atol=2e-5)


def test_the_accuracy_check_compares_column_sums_with_the_unfused_ops():
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    rng = np.random.default_rng(4)
    g, y = (oar.to_tensor(rng.standard_normal((2, 70, 33)).astype("float32")) for _ in range(2))
    w = oar.to_tensor(rng.standard_normal(33).astype("float32"))
    fused = oar.jit.to_static(bias_and_weight_grads, backend="CINN")
    fused(g, y, w)
    s = _C.cinn.cache_stats()
    assert s["accuracy_checks"] >= 1 and s["accuracy_failures"] == 0, s


def test_a_column_sum_is_only_an_output_of_its_group():
    # x.sum(0) read by a member would need every row first: the consumer stays outside.
    def f(x):
        s = oar.sum(x * 2.0, axis=0)
        return x * s + 1.0

    x = oar.randn([9, 17])
    fused = oar.jit.to_static(f, backend="CINN")
    np.testing.assert_allclose(fused(x).numpy(), f(x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_sum_over_a_middle_axis_fuses_with_its_producers():
    # A sum over a middle axis keeps its leading axis (LoopKernel::col_outer: its own
    # group, apart from the column max; test_cinn_middle_axis.py has the rest).
    def f(x, z):
        return oar.max(x * 2.0, axis=0), oar.sum(z + 1.0, axis=1)

    x, z = oar.randn([9, 6]), oar.randn([4, 5, 6])
    fused = oar.jit.to_static(f, backend="CINN")
    for a, b in zip(fused(x, z), f(x, z)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    text = executed(fused)
    assert '"pd_op.max"' not in text and '"pd_op.sum"' not in text, text
    assert text.count("kernel.compiled_kernel") == 2, text


def test_a_column_group_that_fails_to_compile_runs_unfused(capfd):
    oar.set_flags({"FLAGS_cinn_test_fail_compile": True})
    rng = np.random.default_rng(2)
    g, y = (oar.to_tensor(rng.standard_normal((70, 33)).astype("float32")) for _ in range(2))
    w = oar.to_tensor(rng.standard_normal(33).astype("float32"))
    fused = oar.jit.to_static(bias_and_weight_grads, backend="CINN")
    for a, b in zip(fused(g, y, w), bias_and_weight_grads(g, y, w)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    assert "compiled_kernel" not in executed(fused)
    assert _C.cinn.cache_stats()["fallbacks"] >= 1
    # Each reason is logged once per process (test_cinn.py's forced failure may have been first).
    assert capfd.readouterr().err.count("runs unfused") <= 1


def gelu_np(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_backward_decomposes_and_fuses_with_the_bias_gradient(approximate):
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((3, 40, 24))
    bn = rng.standard_normal(24) * 0.5

    def f(x, b):
        return (oar.nn.functional.gelu(x + b, approximate=approximate) * oar.cos(x)).sum()

    def run(fn):
        x = oar.to_tensor(xn.astype("float32"), stop_gradient=False)
        b = oar.to_tensor(bn.astype("float32"), stop_gradient=False)
        fn(x, b).backward()
        return x.grad.numpy(), b.grad.numpy()

    fused = oar.jit.to_static(f, backend="CINN")
    got, eager, plain = run(fused), run(f), run(oar.jit.to_static(f))
    for a, b, c in zip(got, eager, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
    if not approximate:  # against float64 finite differences of the exact GELU
        h, z = 1e-6, xn + bn
        d = (gelu_np(z + h) - gelu_np(z - h)) / (2 * h) * np.cos(xn)
        np.testing.assert_allclose(got[1], d.sum(axis=(0, 1)), rtol=1e-4, atol=1e-4)
    text = executed(fused, backward=True)
    assert '"pd_op.gelu_grad"' not in text and '"pd_op.sum_to"' not in text, text
    assert "kernel.compiled_kernel" in text
    assert _C.cinn.cache_stats()["fallbacks"] == 0
