"""Logical ops and expanded masks in fused groups (Note [Select and masks] in
docs/notes/cinn.md): logical_and/or/xor/not of masks (compares in the group, bool inputs of
any class, Tensor's & | ^ ~ on bool tensors, which record the logical ops, and
oar.bitwise_* of bools, which broadcast through expand first), of float values (nonzero is
true), and an expand of a bool mask to the group's space join the group of the select that
reads them. Each fused program equals the unfused one (to_static without CINN) and eager in
float32, float64 and bfloat16, 2-D and 3-D, with the accuracy check on; the program text
shows that no logical op or expand is left outside the one kernel. Integer operands stay
outside. Every kernel's CUDA C compiles (the conftest's NVRTC check)."""
import numpy as np
import pytest

import oar
from oar import _C

# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]


# Models: x [.., C] float, w [C] float, m [.., 1] bool (a row mask), k bool of x's shape.
def band(x, w, m, k):
    # where(logical_and(x > a, x < b), x, 0)
    return oar.where(oar.logical_and(x > -1.0, x < w), x, 0.0)


def and_or(x, w, m, k):
    keep = ((x > 0.0) & m) | (x < -2.0)  # Tensor.__and__/__or__ on bool: logical_and/or
    return oar.where(keep, x * w, -x)


def invert_xor(x, w, m, k):
    return oar.where(~m ^ (x > w), x, x * 0.5) + oar.where(~k, w, x)


def expanded(x, w, m, k):
    # an expand of the row mask (broadcast_to) and oar.bitwise_or of bools, which expands m
    # to k's shape (broadcast_tensors) before its logical_or
    me = oar.broadcast_to(m, list(x.shape))
    return oar.where(me & k, x * w, x) + oar.where(oar.bitwise_or(m, x > 1.0), w, x * 2.0)


def float_logic(x, w, m, k):
    # float operands: nonzero is true (x - w is 0 where x == w)
    return oar.where(oar.logical_and(x - w, x + 1.0) ^ k, x, w) * oar.where(oar.logical_not(x - w), x * 2.0, x)


def masked_rows(x, w, m, k):
    # a masked softmax whose mask is a band and a row mask
    s = oar.where(oar.logical_and((x > -1.5) | m, k), x * w, oar.full_like(x, -1e4))
    e = oar.exp(s - oar.max(s, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


MODELS = {
    "band": band,
    "and_or": and_or,
    "invert_xor": invert_xor,
    "expanded": expanded,
    "float_logic": float_logic,
    "masked_rows": masked_rows,
}
LEFT = ['"pd_op.logical_and"', '"pd_op.logical_or"', '"pd_op.logical_xor"', '"pd_op.logical_not"',
        '"pd_op.expand"', '"pd_op.where"', '"pd_op.greater_than"', '"pd_op.less_than"']


def floats(a, dtype):
    if dtype == "bfloat16":
        return oar.to_tensor(a.astype("float32")).astype("bfloat16")
    return oar.to_tensor(a.astype(dtype))


def inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2
    w = rng.standard_normal(shape[-1])
    x.reshape(-1)[::7] = w[0]  # some x == w
    m = rng.random(shape[:-1] + (1,)) > 0.4
    k = rng.random(shape) > 0.5
    return floats(x, dtype), floats(w, dtype), oar.to_tensor(m), oar.to_tensor(k)


def executed(static):
    return str(static.concrete_programs[-1].executed_program)


def assert_one_kernel(static):
    text = executed(static)
    for op in LEFT:
        assert op not in text, (op, text)
    assert text.count("kernel.compiled_kernel") == 1, text
    s = _C.cinn.cache_stats()
    assert s["fallbacks"] == 0 and s["accuracy_failures"] == 0 and s["accuracy_checks"] >= 1, s


def assert_close(got, plain, eager, dtype, ref=None):
    if dtype == "bfloat16":
        # float32 arithmetic rounded once against float64 on the same inputs; the unfused
        # bf16 program rounds every step (the accuracy check's tolerance)
        g = got.astype("float32").numpy()
        np.testing.assert_allclose(g, ref.numpy(), rtol=2.0 ** -7, atol=1e-5)
        big = max(1.0, float(np.abs(ref.numpy()).max()))
        np.testing.assert_allclose(g, plain.astype("float32").numpy(), rtol=2e-2, atol=2e-2 * big)
        return
    tol = 2e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got.numpy(), plain.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("shape", [(6, 67), (3, 2, 37)], ids=str)
def test_logical_ops_join_the_select_group(name, dtype, shape):
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    x, w, m, k = inputs(shape, dtype)
    fn = MODELS[name]
    static = oar.jit.to_static(fn, backend="CINN")
    got = static(x, w, m, k)
    plain = oar.jit.to_static(fn)(x, w, m, k)
    ref = fn(x.astype("float64"), w.astype("float64"), m, k) if dtype == "bfloat16" else None
    assert_close(got, plain, fn(x, w, m, k), dtype, ref)
    assert_one_kernel(static)


def test_masks_as_group_outputs():
    # the band, its negation and an expanded mask read outside the group: bool outputs
    def fn(x, w, m):
        keep = (x > -1.0) & (x < w)
        wide = oar.expand(m, list(x.shape))
        return oar.where(keep, x, 0.0) * 3.0, keep, ~keep, wide ^ keep

    for dtype in ("float32", "float64", "bfloat16"):
        oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
        x, w, m, _ = inputs((5, 40), dtype, seed=3)
        static = oar.jit.to_static(fn, backend="CINN")
        got = static(x, w, m)
        want = fn(x, w, m)
        for g, e in zip(got[1:], want[1:]):
            assert g.dtype == oar.bool
            np.testing.assert_array_equal(g.numpy(), e.numpy())
        np.testing.assert_allclose(got[0].astype("float32").numpy(), want[0].astype("float32").numpy(), rtol=1e-6)
        text = executed(static)
        assert text.count("kernel.compiled_kernel") == 1, text
        assert '"pd_op.logical_' not in text and '"pd_op.expand"' not in text, text
        assert _C.cinn.cache_stats()["accuracy_failures"] == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_causal_and_padding_masks(dtype):
    # scores [B, L, L], a causal mask [L, L] and a padding mask [B, 1, L] (broadcast
    # inputs, Note [Broadcast inputs]), combined by & directly and through expands, in a
    # masked softmax: one kernel
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    b, n = 3, 9
    rng = np.random.default_rng(1)
    s = floats(rng.standard_normal((b, n, n)), dtype)
    causal = oar.to_tensor(np.tril(np.ones((n, n), dtype=bool)))
    pad = oar.to_tensor(np.arange(n)[None, None, :] < np.array([9, 5, 1])[:, None, None])

    def fn(s, causal, pad):
        mask = (causal & pad) | ~oar.logical_or(causal.expand([b, n, n]), pad.expand([b, n, n]))
        z = oar.where(mask, s * 0.5, oar.full_like(s, -1e4))
        e = oar.exp(z - oar.max(z, axis=-1, keepdim=True))
        return e / oar.sum(e, axis=-1, keepdim=True)

    static = oar.jit.to_static(fn, backend="CINN")
    got = static(s, causal, pad)
    plain = oar.jit.to_static(fn)(s, causal, pad)
    ref = fn(s.astype("float64"), causal, pad) if dtype == "bfloat16" else None
    assert_close(got, plain, fn(s, causal, pad), dtype, ref)
    assert_one_kernel(static)


def test_a_group_of_masks_only():
    # where(a, ~((a & b) | c) ^ d, c) on bool tensors (d a row mask): one kernel, bytes in
    # and out
    rng = np.random.default_rng(2)
    a, b, c = (rng.random((7, 33)) > 0.5 for _ in range(3))
    d = rng.random((7, 1)) > 0.5

    def fn(a, b, c, d):
        return oar.where(a, ~((a & b) | c) ^ d, c)

    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    static = oar.jit.to_static(fn, backend="CINN")
    args = [oar.to_tensor(v) for v in (a, b, c, d)]
    got = static(*args)
    assert got.dtype == oar.bool
    np.testing.assert_array_equal(got.numpy(), np.where(a, ~((a & b) | c) ^ d, c))
    np.testing.assert_array_equal(got.numpy(), oar.jit.to_static(fn)(*args).numpy())
    text = executed(static)
    assert text.count("kernel.compiled_kernel") == 1, text
    assert '"pd_op.logical_' not in text and '"pd_op.where"' not in text, text
    s = _C.cinn.cache_stats()
    assert s["accuracy_failures"] == 0 and s["accuracy_checks"] >= 1, s


def test_integer_operands_stay_outside():
    # logical ops of int64 (and the integer compare) are not lowered; their mask is a bool
    # input of the float group
    rng = np.random.default_rng(4)
    x = oar.to_tensor(rng.standard_normal((6, 20)).astype("float32"))
    i = oar.to_tensor(rng.integers(-2, 3, (6, 20)))
    j = oar.to_tensor(rng.integers(-1, 2, (6, 20)))

    def fn(x, i, j):
        return oar.where(oar.logical_and(i, j) | (x > 0.5), oar.exp(x), x * 2.0)

    static = oar.jit.to_static(fn, backend="CINN")
    got = static(x, i, j)
    np.testing.assert_allclose(got.numpy(), fn(x, i, j).numpy(), rtol=1e-6)
    text = executed(static)
    assert '"pd_op.logical_and"' in text and '"pd_op.logical_or"' not in text, text
    assert text.count("kernel.compiled_kernel") == 1, text


def test_nan_and_signed_zero_are_true_and_false():
    # a float operand is true when nonzero: NaN and infinities true, 0.0 and -0.0 false (the
    # eager kernels' static_cast<bool>)
    v = np.array([[np.nan, 1.0, -2.0, np.inf, -np.inf, 0.0, -0.0, 3.0] * 3], dtype="float32")
    u = np.array([1.0, np.nan, 0.0, -0.0, -np.inf, -0.0, 0.0, 2.0] * 3, dtype="float32")

    def fn(a, b):
        def bit(mask, v):
            return oar.where(mask, oar.full_like(a, v), oar.full_like(a, 0.0))

        return (bit(oar.logical_and(a, b), 1.0) + bit(oar.logical_or(a, b), 2.0) + bit(oar.logical_xor(a, b), 4.0)
                + bit(oar.logical_not(a), 8.0))

    static = oar.jit.to_static(fn, backend="CINN")
    got = static(oar.to_tensor(v), oar.to_tensor(u)).numpy()
    want = fn(oar.to_tensor(v), oar.to_tensor(u)).numpy()
    np.testing.assert_array_equal(got, want)
    tv, tu = (v != 0) | np.isnan(v), (u != 0) | np.isnan(u)
    np.testing.assert_array_equal(got, 1.0 * (tv & tu) + 2.0 * (tv | tu) + 4.0 * (tv ^ tu) + 8.0 * ~tv)
    text = executed(static)
    assert text.count("kernel.compiled_kernel") == 1 and '"pd_op.logical_' not in text, text


def test_a_band_model_trains_as_eager():
    # forward and backward of where(band, x * w, x * 0.25): the band is a bool output of the
    # forward kernel, read by the backward's selects
    oar.seed(0)
    rng = np.random.default_rng(5)
    x = oar.to_tensor(rng.standard_normal((8, 24)).astype("float32"))
    wv = rng.standard_normal(24).astype("float32")

    def run(static):
        w = oar.to_tensor(wv, stop_gradient=False)

        def fn(x, w):
            keep = (x > -1.0) & ~(x > w)
            return (oar.where(keep, x * w, x * 0.25) ** 2).mean()

        f = oar.jit.to_static(fn, backend="CINN") if static else fn
        loss = f(x, w)
        loss.backward()
        return float(loss), w.grad.numpy().copy(), f

    got_l, got_g, f = run(True)
    want_l, want_g, _ = run(False)
    np.testing.assert_allclose(got_l, want_l, rtol=1e-5)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-5, atol=1e-6)
    fwd = executed(f)
    assert '"pd_op.logical_' not in fwd and fwd.count("kernel.compiled_kernel") >= 1, fwd
