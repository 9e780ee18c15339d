"""Note [Vector width] (docs/notes/cinn.md): on an AVX-512 host a kernel without exp & co
runs 256-bit vectors (its streaming loop without a sweep whole-line 512-bit ones), one
with them 512-bit. The Adam update, written as ops (new p, m, v: streamed and not) and in
place, is checked against float64 NumPy and against the same ops run eagerly (unfused),
over row lengths on both sides of 8 and 16 lanes, at 1 and 2 threads."""
import numpy as np
import pytest

import oar

# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_cinn_nontemporal_store_mb"]
# No NVRTC check: nothing here changes the CUDA C; the other CINN tests compile it.
CINN_NVRTC = False

COLS = [1, 7, 8, 9, 15, 16, 17, 33, 1000]
B1, B2, LR, EPS, T = 0.9, 0.999, 1e-3, 1e-8, 10


def adam_ops(p, g, m, v, sqrt=oar.sqrt):
    m2 = m * B1 + g * (1 - B1)
    v2 = v * B2 + g * g * (1 - B2)
    mh = m2 * (1.0 / (1.0 - B1**T))
    vh = v2 * (1.0 / (1.0 - B2**T))
    return p - mh * LR / (sqrt(vh) + EPS), m2, v2


def adam_in_place(p, g, m, v):
    p2, m2, v2 = adam_ops(p, g, m, v)
    m.copy_(m2)
    v.copy_(v2)
    p.copy_(p2)


def inputs(rows, cols, seed):
    rng = np.random.default_rng(seed)
    p, g, m = (rng.standard_normal((rows, cols)).astype("float32") for _ in range(3))
    return p, g, m, np.abs(rng.standard_normal((rows, cols))).astype("float32") * 0.01


def reference(p, g, m, v):
    return [a.astype("float32") for a in adam_ops(*(x.astype("float64") for x in (p, g, m, v)), sqrt=np.sqrt)]


def with_threads(n, f):
    old = oar.get_num_threads()
    oar.set_num_threads(n)
    try:
        return f()
    finally:
        oar.set_num_threads(old)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mb", [0, -1])  # plain stores; streamed (whole-line vectors)
@pytest.mark.parametrize("cols", COLS)
def test_adam_as_ops_equals_float64_numpy_and_the_unfused_ops(cols, mb, threads):
    arrays = inputs(5, cols, cols)
    oar.set_flags({"FLAGS_cinn_nontemporal_store_mb": mb})
    step = oar.jit.to_static(adam_ops, backend="CINN")
    got = with_threads(threads, lambda: [o.numpy() for o in step(*(oar.to_tensor(a) for a in arrays))])
    eager = [o.numpy() for o in adam_ops(*(oar.to_tensor(a) for a in arrays))]
    for a, e, r in zip(got, eager, reference(*arrays)):
        np.testing.assert_allclose(a, r, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("cols", COLS)
def test_adam_in_place_equals_float64_numpy_and_the_unfused_ops(cols):
    arrays = inputs(4, cols, 100 + cols)
    step = oar.jit.to_static(adam_in_place, backend="CINN")
    ts = [oar.to_tensor(a) for a in arrays]
    step(*ts)
    te = [oar.to_tensor(a) for a in arrays]
    adam_in_place(*te)
    for t, e, r in zip((ts[0], ts[2], ts[3]), (te[0], te[2], te[3]), reference(*arrays)):
        np.testing.assert_allclose(t.numpy(), r, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-6, atol=1e-8)


def test_adam_as_ops_zero_size_and_a_strided_input():
    p, g, m, v = inputs(3, 0, 1)
    step = oar.jit.to_static(adam_ops, backend="CINN")
    assert [o.shape for o in step(*(oar.to_tensor(a) for a in (p, g, m, v)))] == [[3, 0]] * 3
    p, g, m, v = inputs(6, 34, 2)
    gt = oar.to_tensor(np.ascontiguousarray(g.T)).T  # a transposed view as the gradient
    got = [o.numpy() for o in step(oar.to_tensor(p), gt, oar.to_tensor(m), oar.to_tensor(v))]
    for a, r in zip(got, reference(p, g, m, v)):
        np.testing.assert_allclose(a, r, rtol=2e-6, atol=1e-7)
