"""Channel reductions (Note [Channel reductions]): sums and means over N, H, W of
[N, C, H, W] (and over N, L of [N, C, L]) keep C in the middle: batch_norm's training
statistics and its backward's sum(dy) and sum(dy * x_hat). They join their elementwise
producers' group, per-channel values [1, C, 1, 1] are read inside groups, and the row sums
are folded per channel in row order. Against float64 NumPy and the unfused program (odd C,
H*W below and above the vector width, N=1, 0-size, f32/f64, NaN), bit-equal at 1 and 2
threads with one kernel for every batch size, and a batch_norm trained under
to_static(backend='CINN') equal to eager with its gradients (and float64 finite
differences); every kernel's CUDA C is compiled by NVRTC (cinn_env)."""

import numpy as np
import pytest

import oar
from oar import _C



# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]


def axes(nd):
    return [0] + list(range(2, nd))


def stats(x, w):
    ax = axes(len(x.shape))
    y = oar.exp(x * 0.25) * w + 1.0
    return oar.sum(y, axis=ax), oar.mean(y * y, axis=ax, keepdim=True), y * 3.0


def stats_np(x, w):
    ax = tuple(axes(x.ndim))
    y = np.exp(x * 0.25) * w + 1.0
    return y.sum(ax), (y * y).mean(ax, keepdims=True), y * 3.0


def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


def per_channel(shape):
    return [1, shape[1]] + [1] * (len(shape) - 2)


# odd C; H*W 35 / 4 / 99 / 1 against 16 lanes; N=1; [N, C, L]
SHAPES = [(2, 3, 5, 7), (3, 5, 2, 2), (2, 7, 9, 11), (1, 3, 4, 4), (4, 3, 1, 1), (4, 3, 33), (1, 5, 17)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
def test_channel_reductions_fuse_and_equal_numpy_and_the_unfused_program(shape, dtype, tol):
    rng = np.random.default_rng(sum(shape))
    xn, wn = rng.standard_normal(shape) * 2, rng.standard_normal(per_channel(shape))
    x, w = (oar.to_tensor(a.astype(dtype)) for a in (xn, wn))
    fused, plain = oar.jit.to_static(stats, backend="CINN"), oar.jit.to_static(stats)
    got, ref = fused(x, w), plain(x, w)
    want = stats_np(*(a.astype(dtype).astype("float64") for a in (xn, wn)))
    n = np.prod(shape) / shape[1]
    for a, b, c in zip(got, ref, want):
        assert a.shape == b.shape == list(c.shape)
        np.testing.assert_allclose(a.numpy(), c, rtol=tol * 10, atol=tol * 10 * n)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol * 10, atol=tol * 10 * n)
    text = executed(fused)
    assert _C.cinn.cache_stats()["fallbacks"] == 0
    if shape[-1] == 1:  # the last axis 1: no channel reduction (the kernels run; Note [Channel reductions])
        return
    assert text.count("kernel.compiled_kernel") == 1, text
    assert 'op_name = "pd_op.sum"' not in text and 'op_name = "pd_op.mean"' not in text, text


def test_nan_stays_in_its_channel_as_the_kernels():
    xn = np.random.default_rng(5).standard_normal((3, 4, 6, 5))
    xn[1, 2, 3, 4] = np.nan
    x, w = oar.to_tensor(xn.astype("float32")), oar.ones([1, 4, 1, 1])
    got, want = oar.jit.to_static(stats, backend="CINN")(x, w), stats(x, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    nan = np.isnan(got[0].numpy())
    assert nan[2] and nan.sum() == 1


@pytest.mark.parametrize("shape", [(0, 3, 4, 5), (2, 3, 0, 5), (2, 3, 4, 0)], ids=str)
def test_zero_size_shapes_as_the_kernels(shape):
    x, w = oar.zeros(list(shape)), oar.ones(per_channel(shape))
    got, want = oar.jit.to_static(stats, backend="CINN")(x, w), stats(x, w)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # sums 0, means NaN


def test_dynamic_batch_one_kernel_and_bit_equal_at_one_and_two_threads():
    spec = [oar.static.InputSpec([None, 6, 10, 10], "float32"), oar.static.InputSpec([1, 6, 1, 1], "float32")]
    fused = oar.jit.to_static(stats, input_spec=spec, backend="CINN")
    rng = np.random.default_rng(3)
    w = oar.to_tensor(rng.standard_normal((1, 6, 1, 1)).astype("float32"))
    old = oar.get_num_threads()
    for n in (5, 1, 33):
        x = oar.to_tensor(rng.standard_normal((n, 6, 10, 10)).astype("float32"))
        try:
            oar.set_num_threads(1)
            one = [t.numpy() for t in fused(x, w)]
            oar.set_num_threads(2)
            two = [t.numpy() for t in fused(x, w)]
        finally:
            oar.set_num_threads(old)
        for a, b in zip(one, two):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(one, stats_np(x.numpy().astype("float64"), w.numpy().astype("float64"))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)
    text = executed(fused)
    assert text.count("kernel.compiled_kernel") == 1, text
    assert _C.cinn.cache_stats()["compiles"] == 1


class BatchNorm(oar.nn.Layer):
    """batch_norm's training forward from primitives (the statistics over N, H, W)."""

    def __init__(self, c, dtype, rank=4):
        super().__init__()
        rng = np.random.default_rng(c)
        pc = [1, c] + [1] * (rank - 2)
        self.w = self.create_parameter(pc, dtype=dtype)
        self.b = self.create_parameter(pc, dtype=dtype)
        self.w.set_value(rng.uniform(0.5, 1.5, pc).astype(dtype))
        self.b.set_value(rng.standard_normal(pc).astype(dtype))

    def forward(self, x):
        ax = axes(len(x.shape))
        m = oar.mean(x, axis=ax, keepdim=True)
        d = x - m
        v = oar.mean(d * d, axis=ax, keepdim=True)
        return oar.nn.functional.relu(d * oar.rsqrt(v + 1e-5) * self.w + self.b)


def grads(net, fn, xn, tn):
    x = oar.to_tensor(xn)
    x.stop_gradient = False
    y = fn(x)
    loss = ((y - oar.to_tensor(tn)) ** 2).sum()
    loss.backward()
    out = [t.numpy().copy() for t in (y, x.grad, net.w.grad, net.b.grad)]
    net.clear_gradients()
    return out


@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (2, 5, 9), (1, 4, 6, 6)], ids=str)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_batch_norm_training_equals_eager_with_gradients(shape, dtype, tol):
    rng = np.random.default_rng(7)
    xn, tn = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    net = BatchNorm(shape[1], dtype, len(shape))
    eager = grads(net, net, xn, tn)
    fn = oar.jit.to_static(net, backend="CINN")
    for _ in range(2):  # the second call runs the compiled programs again
        got = grads(net, fn, xn, tn)
        for a, b in zip(got, eager):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    s = _C.cinn.cache_stats()
    assert s["fallbacks"] == 0 and s["kernels"] >= 4, s
    cp = fn.forward.concrete_programs[-1]
    bwd = str(cp.executed_backward_program)
    # the backward's per-channel sums (sum(dy), sum(dy * x_hat), ...) run in kernels
    assert 'op_name = "pd_op.sum_to"' not in bwd and 'op_name = "pd_op.sum"' not in bwd, bwd
    assert 'op_name = "pd_op.expand"' not in bwd, bwd


def test_batch_norm_gradients_against_finite_differences():
    rng = np.random.default_rng(11)
    shape = (3, 2, 3, 4)
    xn, tn = rng.standard_normal(shape), rng.standard_normal(shape)
    net = BatchNorm(2, "float64")
    fn = oar.jit.to_static(net, backend="CINN")
    _, gx, gw, _ = grads(net, fn, xn, tn)

    def loss(x):
        return float(((net(oar.to_tensor(x)) - oar.to_tensor(tn)) ** 2).sum().numpy())

    eps = 1e-6
    for idx in [(0, 0, 0, 0), (2, 1, 2, 3), (1, 0, 1, 2)]:
        xp, xm = xn.copy(), xn.copy()
        xp[idx] += eps
        xm[idx] -= eps
        np.testing.assert_allclose(gx[idx], (loss(xp) - loss(xm)) / (2 * eps), rtol=1e-5, atol=1e-6)
    w0 = net.w.numpy().copy()
    for c in range(2):
        for s in (1, -1):
            wv = w0.copy()
            wv[0, c, 0, 0] += s * eps
            net.w.set_value(wv)
            if s == 1:
                lp = loss(xn)
            else:
                lm = loss(xn)
        net.w.set_value(w0)
        np.testing.assert_allclose(gw[0, c, 0, 0], (lp - lm) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_column_and_channel_reductions_with_other_kept_axes_in_one_kernel():
    # A column sum (keeps W), a channel sum (keeps C) and a channel mean keeping N and H:
    # one kernel (no merged columns: the column sum keeps W), each output folded its way;
    # the accuracy check compares the kernel with the group's unfused ops.
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})

    def f(x):
        y = x * 2.0 + 1.0
        return oar.sum(y, axis=[0, 1, 2]), oar.sum(y, axis=[0, 2, 3]), oar.mean(y, axis=[1, 3], keepdim=True)

    xn = np.random.default_rng(2).standard_normal((2, 3, 70, 5))
    fused = oar.jit.to_static(f, backend="CINN")
    y = xn * 2.0 + 1.0
    want = (y.sum((0, 1, 2)), y.sum((0, 2, 3)), y.mean((1, 3), keepdims=True))
    for dtype, tol in (("float32", 1e-5), ("float64", 1e-12)):
        got = fused(oar.to_tensor(xn.astype(dtype)))
        for a, b in zip(got, want):
            assert a.shape == list(b.shape)
            np.testing.assert_allclose(a.numpy(), b, rtol=tol, atol=tol * 100)
    assert executed(fused).count("kernel.compiled_kernel") == 1, executed(fused)
    s = _C.cinn.cache_stats()
    assert s["accuracy_checks"] == 2 and s["accuracy_failures"] == 0, s


@pytest.mark.parametrize("shape,other,merged", [
    ((2, 3, 5, 7), (1, 3, 1, 1), "space=[2,3,35] ref=0 col_axes=2"),
    ((2, 3, 5, 7), (5, 7), "space=[2,3,35] ref=0 col_axes=2"),
    ((4, 6, 3, 3), (6, 3, 3), "space=[4,54] ref=0 col_axes=3"),
    ((1, 2, 9, 4), (1, 1, 9, 1), "space=[1,2,9,4] ref=0\n"),  # y varies along H, not W: no merge
    ((3, 5, 40, 40), (3, 5, 1, 1), "space=[3,5,1600] ref=0 col_axes=2")], ids=str)
def test_short_rows_merge_into_longer_columns(shape, other, merged):
    # An elementwise group whose values are the space's or all 1s over the trailing axes
    # computes over merged columns (Note [Channel reductions], "Merged columns") while the
    # columns are short: [2, 3, 5, 7] as [2, 3, 35]; 40 columns become 1600. Against
    # float64 NumPy, bit-equal at 1 and 2 threads.
    def f(x, y):
        return oar.exp(x * y) + x

    rng = np.random.default_rng(4)
    xn, yn = rng.standard_normal(shape), rng.standard_normal(other)
    fused = oar.jit.to_static(f, backend="CINN")
    x, y = oar.to_tensor(xn.astype("float32")), oar.to_tensor(yn.astype("float32"))
    old = oar.get_num_threads()
    try:
        oar.set_num_threads(1)
        one = fused(x, y).numpy()
        oar.set_num_threads(2)
        two = fused(x, y).numpy()
    finally:
        oar.set_num_threads(old)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, np.exp(xn * yn) + xn, rtol=1e-5, atol=1e-5)
    name = executed(fused).split('kernel_name = "')[1].split('"')[0]
    text = [k["loop_kernel"] for k in _C.cinn.cuda_kernels() if k["name"] == name][0]
    assert merged in text, text

