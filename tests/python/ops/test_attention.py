"""scaled_dot_product_attention: the fused kernel against a float64 NumPy reference
(masks, causal, grouped heads, several query/key blocks, 0-size), gradients against
finite differences and against the composite path, dropout, bad inputs."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (OpCase, assert_close, check_grad, normal, round_to, to_numpy,
                           to_oar)

OP = "scaled_dot_product_attention"


def ref_sdpa(q, k, v, mask=None, causal=False):
    """float64 reference in the [B, S, H, D] layout; fully masked rows give 0."""
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = q[None], k[None], v[None]
        if mask is not None and mask.ndim == 4:
            mask = mask[0]
    g = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    s = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(q.shape[-1])
    sq, sk = q.shape[1], k.shape[1]
    if causal:
        s = s + np.where(np.tril(np.ones((sq, sk))) > 0, 0.0, -np.inf)
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask)
    mx = np.max(s, axis=-1, keepdims=True) if sk else np.zeros(s.shape[:-1] + (1,))
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.exp(s - mx)
    den = e.sum(-1, keepdims=True)
    p = np.where(den > 0, e / np.where(den > 0, den, 1.0), 0.0)
    out = np.einsum("bhij,bjhd->bihd", p, v)
    return out[0] if squeeze else out


def rand(rng, shape):
    return rng.standard_normal(shape)


# (q shape, k shape, v shape, mask shape or None, mask kind, causal)
FORWARD_CASES = [
    ((2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 8), None, None, False),
    ((2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 6), None, None, True),     # head_dim_v != head_dim
    ((2, 9, 4, 8), (2, 6, 4, 8), (2, 6, 4, 8), None, None, True),     # Sq > Sk, causal
    ((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8), None, None, False),    # grouped-query heads
    ((1, 70, 2, 16), (1, 600, 2, 16), (1, 600, 2, 16), None, None, False),  # several blocks
    ((1, 130, 2, 16), (1, 700, 1, 16), (1, 700, 1, 16), None, None, True),
    ((2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 8), (5, 7), "bool", False),
    ((2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 8), (2, 1, 5, 7), "float", True),
    ((2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 8), (2, 4, 5, 1), "float", False),
    ((1, 70, 2, 8), (1, 600, 2, 8), (1, 600, 2, 8), (70, 600), "bool", True),
    ((5, 3, 8), (7, 3, 8), (7, 3, 8), (3, 5, 7), "float", False),    # 3-D inputs
    ((5, 3, 8), (7, 3, 8), (7, 3, 8), None, None, True),
    ((0, 5, 2, 8), (0, 7, 2, 8), (0, 7, 2, 8), None, None, False),    # 0-size
    ((2, 0, 2, 8), (2, 7, 2, 8), (2, 7, 2, 8), None, None, False),
    ((2, 3, 2, 8), (2, 0, 2, 8), (2, 0, 2, 8), None, None, False),    # no keys: output 0
]


def make_mask(rng, shape, kind):
    if kind is None:
        return None
    if kind == "bool":
        m = rng.random(shape) < 0.7
        return m
    return rng.standard_normal(shape)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("case", range(len(FORWARD_CASES)))
def test_forward_vs_numpy(case, dtype):
    qs, ks, vs, ms, kind, causal = FORWARD_CASES[case]
    rng = np.random.default_rng(case)
    q, k, v = (round_to(rand(rng, s), dtype) for s in (qs, ks, vs))
    mask = make_mask(rng, ms, kind)
    if kind == "bool" and mask is not None:
        # keep row 0 of each query fully masked in one case to check the 0-row rule
        mask[..., 0, :] = False
    tm = None
    if mask is not None:
        tm = oar.to_tensor(mask) if kind == "bool" else to_oar(round_to(mask, dtype), dtype)
        mask = mask if kind == "bool" else round_to(mask, dtype)
    out = F.scaled_dot_product_attention(to_oar(q, dtype), to_oar(k, dtype), to_oar(v, dtype),
                                         tm, is_causal=causal)
    assert out.dtype.name == dtype
    ref = ref_sdpa(q, k, v, mask, causal)
    tol = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-10), "bfloat16": (3e-2, 3e-2),
           "float16": (3e-3, 3e-3)}
    assert_close(to_numpy(out), ref, dtype, tol, f"case {case}")


def _grad_case(name, qs, ks, vs, mask=None, causal=False):
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
    return OpCase(name, fn, None, inputs=[normal(qs), normal(ks), normal(vs)],
                  grad_tol=(1e-7, 1e-6))


GRAD_CASES = [
    _grad_case("plain", (1, 3, 2, 4), (1, 4, 2, 4), (1, 4, 2, 3)),
    _grad_case("causal", (2, 4, 2, 3), (2, 3, 2, 3), (2, 3, 2, 3), causal=True),
    _grad_case("gqa", (1, 3, 4, 3), (1, 4, 2, 3), (1, 4, 2, 3)),
    _grad_case("bool_mask", (1, 3, 2, 4), (1, 4, 2, 4), (1, 4, 2, 4),
               mask=oar.to_tensor(np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], bool))),
    _grad_case("float_mask", (2, 3, 2, 4), (2, 4, 2, 4), (2, 4, 2, 4),
               mask=oar.to_tensor(np.random.default_rng(3).standard_normal((2, 1, 3, 4)))),
    _grad_case("3d", (3, 2, 4), (4, 2, 4), (4, 2, 4), causal=True),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_grad_finite_differences(case):
    check_grad(case)


def _fused_vs_composite_grads(qs, ks, vs, mask, causal, dtype="float64"):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    cot = None
    results = []
    for fused in (True, False):
        ts = [oar.to_tensor(a.astype(dtype), stop_gradient=False) for a in arrays]
        m = mask
        if not fused:  # a float mask that needs a gradient takes the composite path
            m = oar.to_tensor(np.where(mask, 0.0, -np.inf) if mask is not None and
                              mask.dtype == np.bool_ else
                              (mask if mask is not None else np.zeros((1,))), dtype)
            m.stop_gradient = False
        elif mask is not None:
            m = oar.to_tensor(mask)
        out = F.scaled_dot_product_attention(*ts, m, is_causal=causal)
        if cot is None:
            cot = rng.standard_normal(out.shape)
        (out * oar.to_tensor(cot.astype(dtype))).sum().backward()
        results.append([out.numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-10, rtol=1e-8)


def test_grad_multiblock_matches_composite():
    # 600 keys = two key blocks, 70 queries = two query blocks, grouped heads, causal.
    _fused_vs_composite_grads((1, 70, 4, 8), (1, 600, 2, 8), (1, 600, 2, 8), None, True)
    mask = np.random.default_rng(1).random((70, 600)) < 0.8
    _fused_vs_composite_grads((1, 70, 2, 8), (1, 600, 2, 8), (1, 600, 2, 8), mask, False)


def test_grad_float32_and_bfloat16():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((2, 6, 2, 8)) for _ in range(3)]
    ref = []
    for dtype, tol in (("float64", None), ("float32", 1e-5), ("bfloat16", 5e-2)):
        ts = [to_oar(round_to(a, dtype), dtype, stop_gradient=False) for a in arrays]
        F.scaled_dot_product_attention(*ts, is_causal=True).sum().backward()
        grads = [to_numpy(t.grad) for t in ts]
        assert all(t.grad.dtype.name == dtype for t in ts)
        if not ref:
            ref = grads
        else:
            for g, r in zip(grads, ref):
                np.testing.assert_allclose(g, r, atol=tol, rtol=tol)


def test_float32_lse_rows_with_fully_masked_queries():
    # The float32 forward stores lse = m + log(l) 16 rows at a time (SLEEF's log); float64
    # takes libm's log per row. 40 queries: two full vectors and a tail, with fully masked
    # rows (lse -inf, zero gradients) inside the vectors and in the tail.
    rng = np.random.default_rng(13)
    arrays = [rng.standard_normal(s) for s in ((1, 40, 2, 16), (1, 50, 2, 16), (1, 50, 2, 16))]
    mask = rng.random((40, 50)) < 0.6
    mask[[3, 17, 36]] = False
    cot = rng.standard_normal((1, 40, 2, 16))
    got = {}
    for dtype in ("float64", "float32"):
        ts = [oar.to_tensor(a.astype(dtype), stop_gradient=False) for a in arrays]
        out = F.scaled_dot_product_attention(*ts, oar.to_tensor(mask))
        (out * oar.to_tensor(cot.astype(dtype))).sum().backward()
        got[dtype] = [out.numpy()] + [t.grad.numpy() for t in ts]
    for a, b in zip(got["float32"], got["float64"]):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=2e-5)
    out32, dq32 = got["float32"][0], got["float32"][1]
    assert not np.any(out32[:, [3, 17, 36]]) and not np.any(dq32[:, [3, 17, 36]])
    assert np.any(dq32[:, [2, 18, 35]])


def test_mask_gradient_finite_differences():
    rng = np.random.default_rng(11)
    q, k, v = (oar.to_tensor(rng.standard_normal(s)) for s in ((1, 3, 2, 4), (1, 4, 2, 4),
                                                                (1, 4, 2, 4)))
    m0 = rng.standard_normal((1, 2, 3, 4))
    cot = rng.standard_normal((1, 3, 2, 4))
    mask = oar.to_tensor(m0, stop_gradient=False)
    (F.scaled_dot_product_attention(q, k, v, mask) * oar.to_tensor(cot)).sum().backward()
    num = np.zeros_like(m0)
    for idx in np.ndindex(*m0.shape):
        vals = []
        for d in (1e-6, -1e-6):
            m = m0.copy()
            m[idx] += d
            o = F.scaled_dot_product_attention(q, k, v, oar.to_tensor(m))
            vals.append(float((o.numpy() * cot).sum()))
        num[idx] = (vals[0] - vals[1]) / 2e-6
    np.testing.assert_allclose(mask.grad.numpy(), num, atol=1e-7, rtol=1e-6)


def test_dropout():
    rng = np.random.default_rng(2)
    q, k, v = (oar.to_tensor(rng.standard_normal((2, 16, 2, 8)).astype("float32"),
                             stop_gradient=False) for _ in range(3))
    base = F.scaled_dot_product_attention(q, k, v)
    # not training: dropout is off, the fused result
    same = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, training=False)
    np.testing.assert_array_equal(same.numpy(), base.numpy())
    # p = 1 drops every weight
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    np.testing.assert_array_equal(zero.numpy(), np.zeros(base.shape, np.float32))
    oar.seed(3)
    d = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert not np.allclose(d.numpy(), base.numpy())
    d.sum().backward()
    assert q.grad is not None and np.isfinite(q.grad.numpy()).all()


def test_double_backward_raises():
    q, k, v = (oar.randn([1, 3, 1, 4], dtype="float64") for _ in range(3))
    for t in (q, k, v):
        t.stop_gradient = False
    out = F.scaled_dot_product_attention(q, k, v)
    (g,) = oar.grad([out.sum()], [q], create_graph=True)
    with pytest.raises(NotImplementedError, match=OP):
        g.sum().backward()


def _t(*shape, dtype="float32"):
    return oar.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("args,exc,text", [
    ((_t(3, 4), _t(3, 4), _t(3, 4)), ValueError, "4-D"),
    ((_t(2, 3, 2, 4), _t(3, 3, 2, 4), _t(3, 3, 2, 4)), ValueError, "batch size"),
    ((_t(2, 3, 2, 4), _t(2, 3, 2, 5), _t(2, 3, 2, 5)), ValueError, "head_dim"),
    ((_t(2, 3, 3, 4), _t(2, 3, 2, 4), _t(2, 3, 2, 4)), ValueError, "multiple"),
    ((_t(2, 3, 2, 4), _t(2, 3, 2, 4), _t(2, 5, 2, 4)), ValueError, "seq_len"),
    ((_t(2, 3, 2, 4), _t(2, 3, 2, 4), _t(2, 3, 2, 4), _t(2, 2, 3, 4)), ValueError, "attn_mask"),
    ((_t(2, 3, 2, 4), _t(2, 3, 2, 4), _t(2, 3, 2, 4), _t(3, 3, dtype="int32")), TypeError,
     "attn_mask"),
    ((_t(2, 3, 2, 4, dtype="int32"),) * 3, TypeError, "floating"),
    ((_t(2, 3, 2, 4), _t(2, 3, 2, 4, dtype="float64"), _t(2, 3, 2, 4)), TypeError, "dtype"),
])
def test_bad_inputs(args, exc, text):
    with pytest.raises(exc) as info:
        F.scaled_dot_product_attention(*args)
    assert text in str(info.value) and OP in str(info.value)


def test_bad_inputs_composite_path():
    q = _t(2, 3, 2, 4)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    m = _t(2, 2, 3, 4)
    m.stop_gradient = False
    with pytest.raises(ValueError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, m)
    with pytest.raises(ValueError, match="head_dim"):
        F.scaled_dot_product_attention(q, _t(2, 3, 2, 5), _t(2, 3, 2, 5), dropout_p=0.1)
    with pytest.raises(TypeError, match="query"):
        F.scaled_dot_product_attention(np.zeros((2, 3, 2, 4)), q, q)


_BF16_SHAPES = [  # (q, k, v, causal, mask kind): blocks of 64/128 queries, 512 keys, odd sizes
    ((2, 200, 4, 64), (2, 200, 4, 64), (2, 200, 4, 64), True, None),
    ((1, 130, 4, 80), (1, 1100, 2, 80), (1, 1100, 2, 48), False, "float"),
    ((3, 17, 2, 32), (3, 33, 2, 32), (3, 33, 2, 32), True, "bool"),
    ((2, 1, 2, 16), (2, 9, 2, 16), (2, 9, 2, 16), False, None),
]


def _bf16_errors():
    """max |out - ref| / max |ref| of bfloat16 sdpa (and of its lse's gradient path) per case."""
    errs = []
    for i, (qs, ks, vs, causal, kind) in enumerate(_BF16_SHAPES):
        rng = np.random.default_rng(40 + i)
        q, k, v = (round_to(rand(rng, s) * 2, "bfloat16") for s in (qs, ks, vs))
        mask = tm = None
        if kind == "bool":
            mask = rng.random((qs[1], ks[1])) < 0.7
            mask[2] = False  # a fully masked query row: output 0
            tm = oar.to_tensor(mask)
        elif kind == "float":
            mask = round_to(rng.standard_normal((1, 1, qs[1], ks[1])), "bfloat16")
            tm = to_oar(mask, "bfloat16")
        out = F.scaled_dot_product_attention(to_oar(q, "bfloat16"), to_oar(k, "bfloat16"), to_oar(v, "bfloat16"),
                                             tm, is_causal=causal)
        ref = ref_sdpa(q, k, v, mask, causal)
        errs.append(float(np.abs(to_numpy(out).astype(np.float64) - ref).max() / np.abs(ref).max()))
    return errs


def test_bfloat16_forward_on_every_gemm_path():
    # Note [bf16 attention on AMX]: on an AMX CPU bfloat16 attention keeps its products in
    # bf16 (P rounded once); OAR_BF16_GEMM=float takes the float path there. Both against
    # float64: the output's rounding (2^-9) plus P's (2^-9 a weight), well inside 2^-7.
    import os
    import subprocess
    import sys
    here = _bf16_errors()
    assert max(here) < 2.0 ** -7, here
    ops_dir = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path[:0] = [%r, %r]; import test_attention as t; print(max(t._bf16_errors()))"
            % (ops_dir, os.path.dirname(ops_dir)))
    env = dict(os.environ, OAR_BF16_GEMM="float")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                       cwd=ops_dir)
    assert r.returncode == 0, r.stderr[-2000:]
    assert float(r.stdout.strip().splitlines()[-1]) < 2.0 ** -7
