"""The CPU code generator's memory tactics (docs/notes/cinn.md, Notes [Streaming stores]
and [Next-row prefetch], "exp" in Note [Reduction sweeps]): a call whose full outputs are
large writes them with aligned non-temporal stores after a scalar head, chosen at run
time (FLAGS_cinn_nontemporal_store_mb; -1 forces it here, 0 turns it off); sweeps that
call exp prefetch the next row; float32 exp rounds with 1.5 * 2^23. Each group with and
without streaming is bit for bit the same, equal to float64 NumPy, at 1 and 2 threads,
over row lengths on both sides of the vector width and the alignment head."""
import numpy as np
import pytest

import oar
from oar import _C

from test_cinn import MODELS  # noqa: E402
from test_cinn_vector_tails import REFS  # noqa: E402  (float64 NumPy references of MODELS)

# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_cinn_nontemporal_store_mb"]
# No NVRTC check: nothing here changes the CUDA C; the other CINN tests compile it.
CINN_NVRTC = False

COLS = [1, 3, 15, 17, 1000, 4097]


def run(static, args, mb, threads=1):
    old = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        oar.set_flags({"FLAGS_cinn_nontemporal_store_mb": mb})
        out = static(*args)
        return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]
    finally:
        oar.set_num_threads(old)


def assert_same_bits(a, b):
    for x, y in zip(a, b):
        assert x.shape == y.shape
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("rows", [1, 9])
@pytest.mark.parametrize("dtype,tol", [("float32", 3e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_streamed_models_equal_the_plain_kernel_and_numpy(name, rows, cols, dtype, tol):
    rng = np.random.default_rng(cols * 10 + rows)
    xn = rng.standard_normal((rows, cols)).astype(dtype)
    wn = rng.standard_normal(cols).astype(dtype)
    args = (oar.to_tensor(xn), oar.to_tensor(wn))
    static = oar.jit.to_static(MODELS[name], backend="CINN")
    plain = run(static, args, 0)
    streamed = run(static, args, -1)
    two = run(static, args, -1, threads=2)
    assert "kernel.compiled_kernel" in str(static.concrete_programs[-1].executed_program)
    assert_same_bits(plain, streamed)
    assert_same_bits(plain, two)
    want = REFS[name](xn.astype("float64"), wn.astype("float64"))
    np.testing.assert_allclose(streamed[0], want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("shape", [(6, 300), (1, 17), (0, 17), (3, 2, 37)])
def test_streamed_bf16_groups_equal_the_plain_kernel(name, shape):
    rng = np.random.default_rng(5)
    x = oar.to_tensor(rng.standard_normal(shape).astype("float32")).astype("bfloat16")
    w = oar.to_tensor(rng.standard_normal(shape[-1]).astype("float32")).astype("bfloat16")
    static = oar.jit.to_static(MODELS[name], backend="CINN")
    # .numpy() of bf16 gives the uint16 bits
    to32 = lambda outs: [(o.astype(np.uint32) << 16).view(np.float32) for o in outs]  # noqa: E731
    plain = to32(run(static, (x, w), 0))
    streamed = to32(run(static, (x, w), -1))
    assert_same_bits(plain, streamed)
    ref = MODELS[name](x.astype("float64"), w.astype("float64")).numpy()
    np.testing.assert_allclose(streamed[0].astype("float64"), ref, rtol=2.0 ** -8, atol=1e-5)


def two_outputs(x, w):
    # Two full outputs of one group (both streamed from one alignment head) and a row one.
    s = oar.sum(x * x, axis=-1, keepdim=True)
    y = x * oar.rsqrt(s + 1.0)
    return y, y * w + x, s


@pytest.mark.parametrize("shape", [(300, 17), (130, 1000), (0, 17), (4, 0), (1, 1), (2, 3, 15)])
def test_many_rows_several_outputs_and_empty_shapes(shape):
    rng = np.random.default_rng(sum(shape))
    xn = rng.standard_normal(shape).astype("float32")
    wn = rng.standard_normal(shape[-1]).astype("float32")
    args = (oar.to_tensor(xn), oar.to_tensor(wn))
    static = oar.jit.to_static(two_outputs, backend="CINN")
    plain = run(static, args, 0)
    streamed = run(static, args, -1)
    assert_same_bits(plain, streamed)
    assert_same_bits(plain, run(static, args, -1, threads=2))
    x, w = xn.astype("float64"), wn.astype("float64")
    s = (x * x).sum(-1, keepdims=True)
    y = x / np.sqrt(s + 1.0)
    for got, want in zip(streamed, (y, y * w + x, s)):
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-5)


def test_the_size_threshold_decides_and_results_do_not_change():
    # 64 x 4096 float32 = 1 MiB of output: -1 streams it, 1 MiB does not (not larger),
    # 0 never does; the same kernel serves all three.
    rng = np.random.default_rng(3)
    args = (oar.to_tensor(rng.standard_normal((64, 4096)).astype("float32")),
            oar.to_tensor(rng.standard_normal(4096).astype("float32")))
    static = oar.jit.to_static(MODELS["rms_norm"], backend="CINN")
    outs = [run(static, args, mb) for mb in (0, 1, -1)]
    assert _C.cinn.cache_stats()["compiles"] == 1
    assert_same_bits(outs[0], outs[1])
    assert_same_bits(outs[0], outs[2])


@pytest.mark.parametrize("cols", [16, 37, 4097])
def test_exp_at_the_rounding_tricks_limits(cols):
    # n = x log2(e) + 1.5 * 2^23 - 1.5 * 2^23 is exact only for |x log2(e)| < 2^22
    # (|x| < 2.9e6); beyond it, at +-inf and NaN, the integer n is out of [-126, 127] and
    # the lane takes the two-step branch, whose selects give 0, inf or NaN. Specials in
    # the first vector, the body and the scalar tail.
    special = np.array([2.9e6, -2.9e6, 2.91e6, -2.91e6, 1e30, -1e30, np.inf, -np.inf, np.nan, 88.72, 88.73,
                        -103.97, -104.0, -87.34, 1e-30, -0.0], "float32")
    rng = np.random.default_rng(cols)
    xn = rng.uniform(-30, 30, (4, cols)).astype("float32")
    flat = xn.reshape(-1)
    at = np.linspace(0, flat.size - 1, special.size).astype(int)
    flat[at] = special
    xn[3, -1] = -1e30  # the last row's scalar tail

    def ex(x):
        return oar.exp(x) * 1.0 + 0.0

    static = oar.jit.to_static(ex, backend="CINN")
    got = run(static, (oar.to_tensor(xn),), 0)[0]
    assert "kernel.compiled_kernel" in str(static.concrete_programs[-1].executed_program)
    with np.errstate(over="ignore"):
        want = np.exp(xn.astype("float64")).astype("float32")
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-45)


@pytest.mark.parametrize("threads", [1, 2])
def test_softmax_with_prefetch_equals_numpy_over_many_rows(threads):
    # The exp sweep prefetches the next row (not past the thread's last row).
    rng = np.random.default_rng(threads)
    xn = (rng.standard_normal((257, 1000)) * 4).astype("float32")
    static = oar.jit.to_static(lambda x: oar.nn.functional.softmax(x * 1.0, -1), backend="CINN")
    got = run(static, (oar.to_tensor(xn),), 0, threads=threads)[0]
    x = xn.astype("float64")
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def adam_in_place(p, g, m, v):
    # An Adam step written into p, m and v (Note [Input writes], as bench_cinn.py's).
    m.copy_(m * 0.9 + g * 0.1)
    v.copy_(v * 0.999 + g * g * 0.001)
    p.copy_(p - m * 1e-3 / (oar.sqrt(v) + 1e-8))


def test_an_in_place_update_is_not_streamed_and_stays_correct():
    # Note [Input writes]: outputs written into inputs keep ordinary stores; the update
    # equals the eager one.
    rng = np.random.default_rng(9)
    shape = (33, 129)
    p, g, m, v = (rng.standard_normal(shape).astype("float32") for _ in range(4))
    v = np.abs(v)
    step = oar.jit.to_static(adam_in_place, backend="CINN")
    ts = [oar.to_tensor(a) for a in (p, g, m, v)]
    oar.set_flags({"FLAGS_cinn_nontemporal_store_mb": -1})
    step(*ts)
    te = [oar.to_tensor(a) for a in (p, g, m, v)]
    adam_in_place(*te)
    for a, b in zip(ts, te):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_row_reductions_over_zero_columns():
    # [4, 0]: a row sum is 0 and a mean NaN for each of the 4 rows (the kernel runs them
    # with empty sweeps; it used to run no rows and leave the row outputs unwritten), a
    # row max raises the eager kernel's error (the group's unfused ops run).
    x = oar.to_tensor(np.zeros((4, 0), "float32"))
    for _ in range(3):  # the output buffers come from the allocator's cache: not zeroed
        garbage = oar.to_tensor(np.full((4, 1), 7.0, "float32")) * 1.0
        del garbage
        s = oar.jit.to_static(lambda x: oar.sum(x * x, axis=-1, keepdim=True) + 1.0, backend="CINN")(x)
        np.testing.assert_array_equal(s.numpy(), np.ones((4, 1), "float32"))
    m = oar.jit.to_static(lambda x: oar.mean(x * x, axis=-1, keepdim=True) + 1.0, backend="CINN")(x)
    assert m.shape == [4, 1] and np.isnan(m.numpy()).all()
    with pytest.raises(Exception, match="max: cannot reduce over axis 1 of size 0"):
        oar.jit.to_static(lambda x: oar.max(x * 1.0, axis=-1, keepdim=True) + 1.0, backend="CINN")(x)
