"""The backward decompositions (docs/notes/cinn.md, "Decomposition, and how to add one"):
softmax_grad, log_softmax_grad, silu_grad, and the multi-result rules of layer_norm_grad
and scaled_dot_product_attention_grad. Under to_static(backend='CINN') a training
program's backward has none of these ops left; its gradients equal eager's and the plain
to_static's (float32 and float64, random inputs), and float64 finite differences. The
attention rule covers bool and additive masks (rows with every key masked included);
causal and grouped-query attention keep their fused backward op (the rule refuses) and
stay right."""

import numpy as np
import pytest

import oar
from oar import _C


F = oar.nn.functional


def backward_text(static_fn):
    return str(static_fn.concrete_programs[-1].executed_backward_program)


def grads(fn, arrays, dtype):
    ts = [oar.to_tensor(a.astype(dtype), stop_gradient=False) for a in arrays]
    fn(*ts).backward()
    return [t.grad.numpy() for t in ts]


def softmax_loss(x, w):
    return (F.softmax(x * w, axis=-1) * oar.cos(x)).sum() + (F.softmax(x, axis=1) * w).sum()


def log_softmax_loss(x, w):
    return (F.log_softmax(x + w, axis=-1) * oar.sin(x)).sum()


def silu_loss(x, w):
    return (F.silu(x * w) * oar.cos(x)).sum()


def layer_norm_loss(x, w):
    # Weight and bias: all three results of layer_norm_grad are used.
    y = F.layer_norm(x, x.shape[-1:], weight=w, bias=w * 0.5)
    return (y * oar.cos(x)).sum()


CASES = {
    "softmax_grad": (softmax_loss, "pd_op.softmax_grad"),
    "log_softmax_grad": (log_softmax_loss, "pd_op.log_softmax_grad"),
    "silu_grad": (silu_loss, "pd_op.silu_grad"),
    "layer_norm_grad": (layer_norm_loss, "pd_op.layer_norm_grad"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("shape", [(5, 6, 37), (3, 1, 8)], ids=str)
def test_backward_decomposes_and_equals_eager(name, dtype, tol, shape):
    fn, op = CASES[name]
    rng = np.random.default_rng(len(name))
    arrays = [rng.standard_normal(shape) * 2, rng.standard_normal(shape[-1:])]
    fused = oar.jit.to_static(fn, backend="CINN")
    got = grads(fused, arrays, dtype)
    for want in (grads(fn, arrays, dtype), grads(oar.jit.to_static(fn), arrays, dtype)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    text = backward_text(fused)
    assert f'"{op}"' not in text, text
    assert "kernel.compiled_kernel" in text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_decomposition_against_finite_differences(name):
    fn, _ = CASES[name]
    rng = np.random.default_rng(7)
    xn, wn = rng.standard_normal((2, 3, 5)), rng.standard_normal(5)
    gx, gw = grads(oar.jit.to_static(fn, backend="CINN"), [xn, wn], "float64")
    h = 1e-6
    for arr, g in ((xn, gx), (wn, gw)):
        for idx in [(0,) * arr.ndim, tuple(s - 1 for s in arr.shape)]:
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += h
            minus[idx] -= h
            args_p = [plus, wn] if arr is xn else [xn, plus]
            args_m = [minus, wn] if arr is xn else [xn, minus]
            fp = fn(*[oar.to_tensor(a) for a in args_p]).item()
            fm = fn(*[oar.to_tensor(a) for a in args_m]).item()
            np.testing.assert_allclose(g[idx], (fp - fm) / (2 * h), rtol=1e-5, atol=1e-6)


def attention_loss(q, k, v, m=None, causal=False):
    return (F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal) * oar.cos(q)).sum()


def attention_case(kind, dtype):
    """q [2, 9, 3, 8], k/v [2, 11, 3, 8] (heads 1 for "gqa") and the mask of `kind`; the
    masks leave query row 4 of batch 1 with every key masked (bool, -inf additive)."""
    rng = np.random.default_rng(11)
    q = rng.standard_normal((2, 9, 3, 8))
    hk = 1 if kind == "gqa" else 3
    k, v = rng.standard_normal((2, 11, hk, 8)), rng.standard_normal((2, 11, hk, 8))
    m, causal = None, kind in ("causal", "bool_causal")
    if kind in ("bool", "bool_causal"):
        mb = rng.random((2, 1, 9, 11)) > 0.3
        mb[:, :, :, 0] = True
        mb[1, :, 4, :] = False
        m = oar.to_tensor(mb)
    elif kind == "additive":
        ma = rng.standard_normal((9, 11)) * 0.5
        ma[2, 3:7] = -np.inf
        ma[4, :] = -np.inf
        m = oar.to_tensor(ma.astype(dtype))
    return q, k, v, m, causal


ATTN_KINDS = ["none", "causal", "bool", "additive", "bool_causal", "gqa"]


@pytest.mark.parametrize("dtype,tol", [("float32", 5e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("kind", ATTN_KINDS)
def test_attention_backward_decomposes_with_masks_and_causal(dtype, tol, kind):
    q, k, v, m, causal = attention_case(kind, dtype)

    def fn(q, k, v):
        return attention_loss(q, k, v, m, causal)

    fused = oar.jit.to_static(fn, backend="CINN")
    got = grads(fused, [q, k, v], dtype)
    for want in (grads(fn, [q, k, v], dtype), grads(oar.jit.to_static(fn), [q, k, v], dtype)):
        for a, b in zip(got, want):
            assert np.isfinite(a).all()
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    if kind in ("bool", "additive"):  # query row 4 sees no key: zero gradient, as the kernel
        row = got[0][1, 4] if kind == "bool" else got[0][:, 4]
        np.testing.assert_array_equal(row, 0.0 * row)
    text = backward_text(fused)
    # Grouped-query attention (fewer key heads) and causal attention keep the fused op: the
    # rule refuses them (the decomposed causal form measured no faster than the kernel).
    kept = kind in ("gqa", "causal", "bool_causal")
    assert ('"pd_op.scaled_dot_product_attention_grad"' in text) == kept, text
    if not kept:
        assert "kernel.compiled_kernel" in text, text


@pytest.mark.parametrize("kind", ["none", "bool", "additive"])
def test_attention_backward_decomposition_against_finite_differences(kind):
    q, k, v, m, causal = attention_case(kind, "float64")

    def fn(q, k, v):
        return attention_loss(q, k, v, m, causal)

    fused = oar.jit.to_static(fn, backend="CINN")
    h = 1e-6
    gs = grads(fused, [q, k, v], "float64")
    assert '"pd_op.scaled_dot_product_attention_grad"' not in backward_text(fused)
    for i, g in enumerate(gs):
        for idx in ((1, 2, 1, 3), (0, 0, 2, 5), (1, 8, 0, 7)):
            if i and idx[1] >= k.shape[1]:
                continue
            args = [q, k, v]
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[i][idx] += h
            minus[i][idx] -= h
            fp = fn(*[oar.to_tensor(a) for a in plus]).item()
            fm = fn(*[oar.to_tensor(a) for a in minus]).item()
            np.testing.assert_allclose(g[idx], (fp - fm) / (2 * h), rtol=1e-5, atol=1e-6)
