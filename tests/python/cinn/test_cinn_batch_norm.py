"""batch_norm's `decomp:` rules (Note [batch_norm decomposition] in docs/notes/cinn.md):
F.batch_norm in training under to_static(backend='CINN') is primitives, fused into a
statistics kernel (one sweep of sum(y) and sum(y * y), y = x - each channel's first
element) and a normalize kernel; batch_norm_grad into one kernel of its two channel sums
and one elementwise kernel. Against the eager kernels and float64 NumPy (output, running
statistics, x/weight/bias gradients; f32/f64; NCHW, NC, NCL, NHWC; odd C, N=1, H*W=1; a
mean of 1e4), the unfused program, 1 and 2 threads bit-equal; eval mode, use_global_stats
and an empty batch as the kernel."""

import numpy as np
import pytest

import oar
import oar.nn.functional as F

CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]

# odd C; H*W 35 / 4 / 1; N=1; [N, C, L]; [N, C]
SHAPES = [((2, 3, 5, 7), "NCHW"), ((3, 5, 2, 2), "NCHW"), ((1, 3, 4, 4), "NCHW"), ((4, 3, 1, 1), "NCHW"),
          ((4, 3, 33), "NCL"), ((1, 5, 17), "NCL"), ((6, 7), "NC"), ((2, 4, 3, 5), "NHWC")]
TOL = {"float32": 2e-5, "float64": 1e-11}


def chan_axis(shape, fmt):
    return len(shape) - 1 if fmt in ("NLC", "NHWC", "NDHWC") and len(shape) > 2 else 1


def reference(xn, wn, bn, rm, rv, fmt, momentum=0.9, eps=1e-5):
    """float64 NumPy: output, running mean/var and the gradients of sum(out * g)."""
    ca = chan_axis(xn.shape, fmt)
    ax = tuple(i for i in range(xn.ndim) if i != ca)
    bs = [1] * xn.ndim
    bs[ca] = -1
    m = xn.mean(ax)
    v = ((xn - m.reshape(bs)) ** 2).mean(ax)
    r = 1.0 / np.sqrt(v + eps)
    xh = (xn - m.reshape(bs)) * r.reshape(bs)
    out = xh * wn.reshape(bs) + bn.reshape(bs)
    return out, momentum * rm + (1 - momentum) * m, momentum * rv + (1 - momentum) * v, xh, r, ax, bs


def grads_np(g, wn, xh, r, ax, bs):
    gw = g * wn.reshape(bs)
    dx = r.reshape(bs) * (gw - gw.mean(ax, keepdims=True) - xh * (gw * xh).mean(ax, keepdims=True))
    return dx, (g * xh).sum(ax), g.sum(ax)


def make(shape, fmt, dtype, shift=0.0, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[chan_axis(shape, fmt)]
    xn = rng.standard_normal(shape) * 2 + shift
    wn, bn = rng.uniform(0.5, 1.5, c), rng.standard_normal(c)
    rm, rv = rng.standard_normal(c), rng.uniform(0.5, 2.0, c)
    g = rng.standard_normal(shape)
    return [a.astype(dtype) for a in (xn, wn, bn, rm, rv, g)]


def run(fn, arrays, fmt, grads=True, **kw):
    """fn(x, w, b) with fresh running statistics; returns out, mean, var, dx, dw, db."""
    xn, wn, bn, rm, rv, g = arrays
    rmean, rvar = oar.to_tensor(rm), oar.to_tensor(rv)
    x, w, b = (oar.to_tensor(a) for a in (xn, wn, bn))
    for t in (x, w, b):
        t.stop_gradient = not grads
    f = fn(rmean, rvar, fmt, **kw)
    out = f(x, w, b)
    res = [out.numpy(), rmean.numpy(), rvar.numpy()]
    if grads:
        (out * oar.to_tensor(g)).sum().backward()
        res += [x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]
    return res


def bn(static=None, training=True, use_global_stats=None):
    def make_fn(rm, rv, fmt):
        def f(x, w, b):
            return F.batch_norm(x, rm, rv, w, b, training=training, data_format=fmt,
                                use_global_stats=use_global_stats)
        return f if static is None else oar.jit.to_static(f, backend=static) if static else oar.jit.to_static(f)
    return make_fn


def executed(fn):
    cp = fn.concrete_programs[-1] if hasattr(fn, "concrete_programs") else fn.forward.concrete_programs[-1]
    return str(cp.executed_program)


@pytest.mark.parametrize("shape,fmt", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_decomposed_batch_norm_equals_numpy_the_kernel_and_the_unfused_program(shape, fmt, dtype):
    arrays = make(shape, fmt, dtype)
    got = run(bn("CINN"), arrays, fmt)
    eager = run(bn(), arrays, fmt)
    plain = run(bn(False), arrays, fmt)
    xn, wn, bn_, rm, rv, g = (a.astype("float64") for a in arrays)
    out, mo, vo, xh, r, ax, bs = reference(xn, wn, bn_, rm, rv, fmt)
    want = [out, mo, vo, *grads_np(g, wn, xh, r, ax, bs)]
    tol = TOL[dtype]
    for name, a, e, p, w in zip(["out", "mean", "var", "dx", "dw", "db"], got, eager, plain, want):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol * scale, err_msg=name)
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale, err_msg=name)
        np.testing.assert_allclose(a, p, rtol=tol, atol=tol * scale, err_msg=name)


def test_the_forward_and_backward_are_two_kernels_each_without_batch_norm_ops():
    arrays = make((4, 6, 5, 7), "NCHW", "float32")
    rm, rv = oar.to_tensor(arrays[3]), oar.to_tensor(arrays[4])
    f = bn("CINN")(rm, rv, "NCHW")
    x, w, b = (oar.to_tensor(a) for a in arrays[:3])
    for t in (x, w, b):
        t.stop_gradient = False
    (f(x, w, b) * oar.to_tensor(arrays[5])).sum().backward()
    cp = f.concrete_programs[-1]
    fwd = str(cp.executed_program)
    assert "batch_norm" not in fwd
    # the statistics one kernel reading x (and its shift), the output one more
    big = [ln for ln in fwd.splitlines() if "compiled_kernel" in ln and "(tensor<4x6x5x7xf32>" in ln]
    assert len(big) == 2, fwd
    # the two channel sums one kernel reading x and dy, x_grad one more
    bwd = str(cp.executed_backward_program)
    assert "batch_norm_grad" not in bwd
    assert sum("compiled_kernel" in ln and "4x6x5x7" in ln.split("->")[0] for ln in bwd.splitlines()) == 2, bwd


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-4), ("float64", 1e-9)])
def test_a_large_mean_keeps_its_digits(dtype, tol):
    """mean 1e4, std 2: the shifted one-sweep statistics against float64 (the textbook
    E[x^2] - E[x]^2 in float32 would lose the variance entirely)."""
    arrays = make((4, 5, 6, 6), "NCHW", dtype, shift=1e4)
    got = run(bn("CINN"), arrays, "NCHW")
    xn, wn, bn_, rm, rv, g = (a.astype("float64") for a in arrays)
    out, mo, vo, xh, r, ax, bs = reference(xn, wn, bn_, rm, rv, "NCHW")
    want = [out, mo, vo, *grads_np(g, wn, xh, r, ax, bs)]
    for name, a, w in zip(["out", "mean", "var", "dx", "dw", "db"], got, want):
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())), err_msg=name)


def test_one_and_two_threads_bit_equal(threads):
    arrays = make((3, 5, 9, 11), "NCHW", "float32")
    got = run(bn("CINN"), arrays, "NCHW")
    old = oar.get_num_threads()
    oar.set_num_threads(3 - threads)
    try:
        other = run(bn("CINN"), arrays, "NCHW")
    finally:
        oar.set_num_threads(old)
    for a, b in zip(got, other):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("training,ugs", [(False, None), (True, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_running_statistics_modes_equal_the_kernel(training, ugs, dtype):
    """Eval mode and use_global_stats normalize with the running statistics and leave them."""
    arrays = make((2, 3, 5, 7), "NCHW", dtype)
    got = run(bn("CINN", training, ugs), arrays, "NCHW")
    eager = run(bn(None, training, ugs), arrays, "NCHW")
    tol = TOL[dtype]
    for a, e in zip(got, eager):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[1], arrays[3])
    np.testing.assert_array_equal(got[2], arrays[4])


def test_an_empty_batch_stays_the_kernel():
    arrays = make((0, 3, 4, 5), "NCHW", "float32")
    got = run(bn("CINN"), arrays, "NCHW", grads=False)
    eager = run(bn(), arrays, "NCHW", grads=False)
    for a, e in zip(got, eager):
        np.testing.assert_array_equal(a, e)
    rm, rv = oar.to_tensor(arrays[3]), oar.to_tensor(arrays[4])
    f = bn("CINN")(rm, rv, "NCHW")
    f(*(oar.to_tensor(a) for a in arrays[:3]))
    assert "batch_norm" in executed(f)


def test_batch_norm_layer_trains_under_cinn_as_eager():
    """nn.BatchNorm2D's buffers under to_static(backend='CINN'): three steps, running
    statistics and gradients as eager."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, 3, 6, 6)).astype("float32") * 3 + 1 for _ in range(3)]
    oar.seed(0)
    eager = oar.nn.BatchNorm2D(3)
    static = oar.nn.BatchNorm2D(3)
    static.set_state_dict(eager.state_dict())
    fn = oar.jit.to_static(static, backend="CINN")
    for xn in xs:
        ye, ys = eager(oar.to_tensor(xn)), fn(oar.to_tensor(xn))
        ye.sum().backward()
        ys.sum().backward()
        np.testing.assert_allclose(ys.numpy(), ye.numpy(), rtol=1e-5, atol=1e-5)
    for (n, a), (_, b) in zip(static.state_dict().items(), eager.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5, err_msg=n)
    np.testing.assert_allclose(static.weight.grad.numpy(), eager.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert "batch_norm" not in executed(fn)
