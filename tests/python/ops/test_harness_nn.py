"""Harness entries for issue 3's nn.functional ops that the per-group suites left out, each
against a float64 NumPy reference written here: conv1d/3d and their transposes, 1-D / 3-D
(adaptive) pooling, instance_norm, local_response_norm, prelu, glu, linear, bilinear, the
losses, upsample and scaled_dot_product_attention; dropout / alpha_dropout / gumbel_softmax
gradients under a fixed seed (their sampling is checked in test_harness_random.py); bad
inputs of every nn functional of the scope."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (FLOAT_DTYPES, NARROW_DTYPES, Gen, OpCase, case_id, check_bad_inputs,
                           check_forward, check_grad, normal, tensor, uniform)

ALL_FLOATS = FLOAT_DTYPES + NARROW_DTYPES
LOOSE = {"float16": (3e-2, 2e-2), "bfloat16": (2e-1, 5e-2)}


def _t(*shape, dtype="float32"):
    return tensor(np.random.default_rng(0).standard_normal(shape), dtype)


# ---------------------------------------------------------------- references
def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Channels-first N-d convolution (cross-correlation) by explicit windows."""
    nd = x.ndim - 2
    st, pd, dl = ([v] * nd if np.isscalar(v) else list(v) for v in (stride, padding, dilation))
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pd])
    o, cg, ks = w.shape[0], w.shape[1], w.shape[2:]
    outs = [(x.shape[2 + i] - dl[i] * (ks[i] - 1) - 1) // st[i] + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], o, *outs))
    og = o // groups
    for pos in np.ndindex(*outs):
        for kpos in np.ndindex(*ks):
            idx = tuple(pos[i] * st[i] + kpos[i] * dl[i] for i in range(nd))
            xv = x[(slice(None), slice(None)) + idx]  # [N, C]
            for g in range(groups):
                out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
                    xv[:, g * cg:(g + 1) * cg] @ w[(slice(g * og, (g + 1) * og), slice(None))
                                                   + kpos].T
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def np_conv_transpose(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Channels-first N-d transposed convolution, w: [C_in, C_out / groups, *k]."""
    nd = x.ndim - 2
    st, pd, dl = ([v] * nd if np.isscalar(v) else list(v) for v in (stride, padding, dilation))
    cin, og, ks = w.shape[0], w.shape[1], w.shape[2:]
    cg = cin // groups
    full = [(x.shape[2 + i] - 1) * st[i] + dl[i] * (ks[i] - 1) + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], og * groups, *full))
    for pos in np.ndindex(*x.shape[2:]):
        for kpos in np.ndindex(*ks):
            idx = tuple(pos[i] * st[i] + kpos[i] * dl[i] for i in range(nd))
            for g in range(groups):
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]  # [N, cg]
                out[(slice(None), slice(g * og, (g + 1) * og)) + idx] += \
                    xv @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + kpos]
    crop = tuple(slice(p, f - p) for p, f in zip(pd, full))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def np_pool(x, k, stride=None, padding=0, kind="max"):
    """Channels-first N-d max / avg pooling (avg excludes the padding, Paddle's exclusive)."""
    nd = x.ndim - 2
    k = [k] * nd if np.isscalar(k) else list(k)
    st = k if stride is None else ([stride] * nd if np.isscalar(stride) else list(stride))
    pd = [padding] * nd if np.isscalar(padding) else list(padding)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pd], constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), [(p, p) for p in pd])
    outs = [(x.shape[2 + i] + 2 * pd[i] - k[i]) // st[i] + 1 for i in range(nd)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in np.ndindex(*outs):
        win = tuple(slice(pos[i] * st[i], pos[i] * st[i] + k[i]) for i in range(nd))
        v = xp[(slice(None), slice(None)) + win]
        v = v.reshape(v.shape[:2] + (int(np.prod(v.shape[2:])),))
        if kind == "max":
            out[(slice(None), slice(None)) + pos] = v.max(-1)
        else:
            out[(slice(None), slice(None)) + pos] = v.sum(-1) / ones[win].sum()
    return out


def np_adaptive(x, size, kind="avg"):
    nd = x.ndim - 2
    size = [size] * nd if np.isscalar(size) else list(size)
    out = np.zeros(x.shape[:2] + tuple(size))
    for pos in np.ndindex(*size):
        win = tuple(slice(int(math.floor(p * L / s)), int(math.ceil((p + 1) * L / s)))
                    for p, L, s in zip(pos, x.shape[2:], size))
        v = x[(slice(None), slice(None)) + win]
        v = v.reshape(v.shape[:2] + (int(np.prod(v.shape[2:])),))
        out[(slice(None), slice(None)) + pos] = v.max(-1) if kind == "max" else v.mean(-1)
    return out


def np_instance_norm(x, w, b, eps=1e-5):
    ax = tuple(range(2, x.ndim))
    mu, var = x.mean(ax, keepdims=True), x.var(ax, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mu) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape)


def np_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    win = sum(sq[:, i:i + c] for i in range(size))
    return x / (k + alpha * win / size) ** beta


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _reduce(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def np_log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def np_cross_entropy(x, label, weight=None, ignore_index=-100, reduction="mean",
                     soft_label=False, label_smoothing=0.0):
    lp = np_log_softmax(x)
    c = x.shape[-1]
    if soft_label:
        return _reduce(-(label * lp).sum(-1), reduction)
    lab = label.astype(np.int64)
    valid = lab != ignore_index
    safe = np.where(valid, lab, 0)
    onehot = np.eye(c)[safe]
    target = (1 - label_smoothing) * onehot + label_smoothing / c
    w = np.ones(c) if weight is None else weight
    per = -(target * lp).sum(-1) * w[safe] * valid
    if reduction == "mean":
        return per.sum() / (w[safe] * valid).sum()
    return _reduce(per, reduction)


def np_nll(x, label, weight=None, ignore_index=-100, reduction="mean"):
    lab = label.astype(np.int64)
    valid = lab != ignore_index
    safe = np.where(valid, lab, 0)
    w = (np.ones(x.shape[1]) if weight is None else weight)[safe] * valid
    per = -np.take_along_axis(x, safe[:, None], 1)[:, 0] * w
    return per.sum() / w.sum() if reduction == "mean" else _reduce(per, reduction)


def np_sdpa(q, k, v, mask=None, causal=False):
    """Paddle's layout: [batch, seq, heads, head_dim]."""
    q, k, v = (np.swapaxes(a, 1, 2) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.swapaxes(p @ v, 1, 2)


# Class labels / soft labels: fixed arrays closed over by the cases (the harness's inputs are
# the differentiated float tensors; labels are not).
_R = np.random.default_rng(5)
Y6 = np.array([0, 1, 4, 1, 3, 2])  # with ignore_index=1 twice
Y5 = _R.integers(0, 4, 5)
YN = np.array([2, 0, 3, 1, 0, 2])  # nll_loss, ignore_index=0 twice
SOFT = _R.uniform(0.1, 1.0, (4, 3))
SOFT /= SOFT.sum(-1, keepdims=True)
W5 = _R.uniform(0.5, 2.0, 5)  # class weights


def _lab(a):
    return oar.to_tensor(a.astype(np.int64))


def _probs(lo=0.05, hi=0.95):
    return uniform(lo, hi)


def _seeded(fn, seed=11):
    """fn under a fixed seed, so finite differences see one fixed random mask / noise."""
    def run(*a, **k):
        oar.seed(seed)
        return fn(*a, **k)
    return run


def _conv(name, fn_oar, ref, xs, ws, attrs, tol=None, dtypes=FLOAT_DTYPES):
    return OpCase(name, fn_oar, ref, inputs=[normal(xs), normal(ws)], attrs=attrs, dtypes=dtypes,
                  tol=tol or {"float32": (1e-4, 1e-4)}, op=name.split("[")[0])


def _nlc(fn):  # channels-last entry points: the reference runs channels-first
    return lambda x, w, **k: np.moveaxis(fn(np.moveaxis(x, -1, 1), w, **k), 1, -1)


CONV_CASES = [
    _conv("conv1d", lambda x, w, **k: F.conv1d(x, w, **k), np_conv, (2, 4, 7), (6, 2, 3),
          dict(stride=2, padding=1, dilation=1, groups=2)),
    _conv("conv1d[dil,NLC]", lambda x, w, **k: F.conv1d(x, w, data_format="NLC", **k),
          _nlc(np_conv), (2, 8, 3), (4, 3, 2), dict(stride=1, padding=2, dilation=2)),
    _conv("conv3d", lambda x, w, **k: F.conv3d(x, w, **k), np_conv, (1, 2, 4, 5, 3),
          (3, 2, 2, 3, 2), dict(stride=[1, 2, 1], padding=[1, 0, 1], dilation=1)),
    _conv("conv3d[groups,NDHWC]", lambda x, w, **k: F.conv3d(x, w, data_format="NDHWC", **k),
          _nlc(np_conv), (1, 4, 3, 4, 2), (2, 1, 2, 2, 2), dict(stride=1, padding=0, groups=2)),
    _conv("conv1d_transpose", lambda x, w, **k: F.conv1d_transpose(x, w, **k), np_conv_transpose,
          (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    _conv("conv3d_transpose", lambda x, w, **k: F.conv3d_transpose(x, w, **k),
          np_conv_transpose, (1, 2, 3, 2, 3), (2, 3, 2, 2, 2),
          dict(stride=[2, 1, 1], padding=[0, 1, 0], dilation=[1, 1, 2])),
]


def _pool(name, fn_oar, ref, xs, attrs, shapes=None):
    return OpCase(name, fn_oar, ref, inputs=[normal(xs)], attrs=attrs, dtypes=FLOAT_DTYPES,
                  shapes=shapes, grad_shapes=[[xs]], op=name.split("[")[0])


POOL_CASES = [
    _pool("max_pool1d", lambda x, **k: F.max_pool1d(x, **k),
          lambda x, **k: np_pool(x, k["kernel_size"], k["stride"], k["padding"], "max"),
          (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    _pool("avg_pool1d", lambda x, **k: F.avg_pool1d(x, **k),
          lambda x, **k: np_pool(x, k["kernel_size"], k["stride"], k["padding"], "avg"),
          (2, 3, 8), dict(kernel_size=3, stride=2, padding=1)),
    _pool("max_pool3d", lambda x, **k: F.max_pool3d(x, **k),
          lambda x, **k: np_pool(x, k["kernel_size"], k["stride"], k["padding"], "max"),
          (1, 2, 4, 5, 4), dict(kernel_size=2, stride=[2, 1, 2], padding=[0, 1, 1])),
    _pool("avg_pool3d", lambda x, **k: F.avg_pool3d(x, **k),
          lambda x, **k: np_pool(x, k["kernel_size"], k["stride"], k["padding"], "avg"),
          (1, 2, 4, 4, 5), dict(kernel_size=[2, 3, 2], stride=2, padding=[1, 1, 0])),
    _pool("adaptive_avg_pool1d", lambda x, **k: F.adaptive_avg_pool1d(x, **k),
          lambda x, output_size: np_adaptive(x, output_size, "avg"), (2, 3, 7),
          dict(output_size=3), shapes=[[(2, 3, 7)], [(0, 3, 7)]]),
    _pool("adaptive_max_pool1d", lambda x, **k: F.adaptive_max_pool1d(x, **k),
          lambda x, output_size: np_adaptive(x, output_size, "max"), (2, 3, 7),
          dict(output_size=3)),
    _pool("adaptive_avg_pool3d", lambda x, **k: F.adaptive_avg_pool3d(x, **k),
          lambda x, output_size: np_adaptive(x, output_size, "avg"), (1, 2, 5, 4, 3),
          dict(output_size=[2, 3, 2])),
    _pool("adaptive_max_pool3d", lambda x, **k: F.adaptive_max_pool3d(x, **k),
          lambda x, output_size: np_adaptive(x, output_size, "max"), (1, 2, 5, 4, 3),
          dict(output_size=[3, 2, 1])),
]

LOSS = dict(dtypes=FLOAT_DTYPES, out_dtype=None)
CASES = CONV_CASES + POOL_CASES + [
    OpCase("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           np_instance_norm, inputs=[normal(), normal(), normal()],
           shapes=[[(2, 3, 4, 5), (3,), (3,)], [(2, 3, 6), (3,), (3,)]],
           tol={"float32": (1e-4, 1e-4)}, grad_shapes=[[(2, 3, 4), (3,), (3,)]]),
    OpCase("local_response_norm", lambda x, **k: F.local_response_norm(x, **k), np_lrn,
           inputs=[normal()], shapes=[[(2, 5, 3, 2)], [(1, 4, 3)]],
           attrs=dict(size=3, alpha=0.5, beta=0.75, k=1.5)),
    OpCase("prelu", lambda x, w: F.prelu(x, w),
           lambda x, w: np.where(x > 0, x, x * w.reshape((1, -1) + (1,) * (x.ndim - 2))),
           inputs=[normal(), uniform(0.1, 0.5)], shapes=[[(2, 3, 4), (3,)], [(2, 3, 2, 2), (1,)]],
           dtypes=ALL_FLOATS, tol=LOOSE),
    OpCase("glu", lambda x, axis=-1: F.glu(x, axis),
           lambda x, axis=-1: np.split(x, 2, axis)[0] * _sigmoid(np.split(x, 2, axis)[1]),
           inputs=[normal()], shapes=[[(3, 4)], [(2, 6, 3)], [(0, 4)]], attrs={"axis": 1},
           dtypes=ALL_FLOATS, tol=LOOSE),
    OpCase("linear", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w + b,
           inputs=[normal(), normal(), normal()],
           shapes=[[(3, 4), (4, 5), (5,)], [(2, 3, 4), (4, 2), (2,)], [(0, 4), (4, 5), (5,)]],
           dtypes=ALL_FLOATS, tol={"float32": (1e-5, 1e-5), **LOOSE}),
    OpCase("bilinear", lambda a, b, w, bias: F.bilinear(a, b, w, bias),
           lambda a, b, w, bias: np.einsum("ni,oij,nj->no", a, w, b) + bias,
           inputs=[normal(), normal(), normal(), normal()],
           shapes=[[(3, 2), (3, 4), (5, 2, 4), (1, 5)], [(0, 2), (0, 4), (5, 2, 4), (1, 5)]]),
    OpCase("mse_loss", lambda x, y, **k: F.mse_loss(x, y, **k),
           lambda x, y, reduction: _reduce((x - y) ** 2, reduction), inputs=[normal(), normal()],
           shapes=[[(3, 4), (3, 4)]], attrs={"reduction": "mean"}, **LOSS),
    OpCase("mse_loss[none]", lambda x, y, **k: F.mse_loss(x, y, **k),
           lambda x, y, reduction: _reduce((x - y) ** 2, reduction), inputs=[normal(), normal()],
           shapes=[[(3, 4), (3, 4)], [(0, 2), (0, 2)]], attrs={"reduction": "none"},
           dtypes=ALL_FLOATS, op="mse_loss"),
    OpCase("l1_loss", lambda x, y, **k: F.l1_loss(x, y, **k),
           lambda x, y, reduction: _reduce(np.abs(x - y), reduction), inputs=[normal(), normal()],
           shapes=[[(3, 4), (3, 4)]], attrs={"reduction": "sum"}, **LOSS),
    OpCase("smooth_l1_loss", lambda x, y, **k: F.smooth_l1_loss(x, y, **k),
           lambda x, y, reduction, delta: _reduce(np.where(
               np.abs(x - y) < delta, 0.5 * (x - y) ** 2, delta * (np.abs(x - y) - 0.5 * delta)),
               reduction), inputs=[normal(), normal()], shapes=[[(4, 5), (4, 5)]],
           attrs={"reduction": "mean", "delta": 0.7}, **LOSS),
    OpCase("binary_cross_entropy", lambda p, y, w: F.binary_cross_entropy(p, y, w),
           lambda p, y, w: np.mean(-w * (y * np.log(p) + (1 - y) * np.log(1 - p))),
           inputs=[_probs(), _probs(0, 1), uniform(0.5, 2)],
           shapes=[[(3, 4), (3, 4), (3, 4)]], **LOSS),
    OpCase("binary_cross_entropy_with_logits",
           lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw,
                                                               reduction="sum"),
           lambda x, y, pw: np.sum(-(pw * y * np.log(_sigmoid(x))
                                     + (1 - y) * np.log(1 - _sigmoid(x)))),
           inputs=[normal(scale=3), _probs(0, 1), uniform(0.5, 2)],
           shapes=[[(3, 4), (3, 4), (4,)]], **LOSS),
    OpCase("kl_div", lambda x, y, **k: F.kl_div(x, y, **k),
           lambda x, y, reduction, log_target: _reduce(
               np.exp(y) * (y - x) if log_target else y * (np.log(y) - x), reduction),
           inputs=[normal(), _probs()], shapes=[[(3, 4), (3, 4)]],
           attrs={"reduction": "mean", "log_target": False}, **LOSS),
    OpCase("kl_div[log_target]", lambda x, y, **k: F.kl_div(x, y, **k),
           lambda x, y, reduction, log_target: _reduce(np.exp(y) * (y - x), reduction),
           inputs=[normal(), normal()], shapes=[[(3, 4), (3, 4)]],
           attrs={"reduction": "sum", "log_target": True}, op="kl_div", **LOSS),
    OpCase("margin_ranking_loss", lambda x, o, l: F.margin_ranking_loss(x, o, l, margin=0.3),
           lambda x, o, l: np.mean(np.maximum(0, -l * (x - o) + 0.3)),
           inputs=[normal(), normal(), Gen(lambda r, s: r.choice([-1.0, 1.0], s))],
           shapes=[[(6,), (6,), (6,)]], **LOSS),
    OpCase("cross_entropy",
           lambda x: F.cross_entropy(x, _lab(Y6), weight=oar.to_tensor(W5).astype(x.dtype),
                                     ignore_index=1),
           lambda x: np_cross_entropy(x, Y6, W5, ignore_index=1),
           inputs=[normal()], shapes=[[(6, 5)]], **LOSS),
    OpCase("cross_entropy[smoothing]",
           lambda x: F.cross_entropy(x, _lab(Y5), label_smoothing=0.2, reduction="sum"),
           lambda x: np_cross_entropy(x, Y5, reduction="sum", label_smoothing=0.2),
           inputs=[normal()], shapes=[[(5, 4)]], op="cross_entropy", **LOSS),
    OpCase("cross_entropy[soft]",
           lambda x: F.cross_entropy(x, oar.to_tensor(SOFT).astype(x.dtype), soft_label=True),
           lambda x: np_cross_entropy(x, SOFT, soft_label=True),
           inputs=[normal()], shapes=[[(4, 3)]], op="cross_entropy", **LOSS),
    OpCase("nll_loss", lambda x, w: F.nll_loss(x, _lab(YN), weight=w, ignore_index=0),
           lambda x, w: np_nll(x, YN, w, ignore_index=0),
           inputs=[normal(), uniform(0.5, 2)], shapes=[[(6, 4), (4,)]], **LOSS),
    OpCase("upsample", lambda x: F.upsample(x, scale_factor=2, mode="nearest"),
           lambda x: x.repeat(2, axis=2).repeat(2, axis=3), inputs=[normal()],
           shapes=[[(1, 2, 3, 2)], [(0, 2, 2, 2)]], dtypes=ALL_FLOATS),
    OpCase("upsample[bilinear,ac]",
           lambda x: F.upsample(x, size=[3], mode="linear", align_corners=True,
                                data_format="NCW"),
           lambda x: np.stack([np.interp(np.linspace(0, x.shape[-1] - 1, 3),
                                         np.arange(x.shape[-1]), r)
                               for r in x.reshape(-1, x.shape[-1])]).reshape(x.shape[:2] + (3,)),
           inputs=[normal()], shapes=[[(2, 3, 5)]], op="upsample"),
    OpCase("scaled_dot_product_attention",
           lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
           np_sdpa, inputs=[normal(), normal(), normal(), normal()],
           shapes=[[(2, 3, 2, 4), (2, 5, 2, 4), (2, 5, 2, 3), (2, 1, 3, 5)]],
           tol={"float32": (1e-5, 1e-5)}),
    OpCase("scaled_dot_product_attention[causal]",
           lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: np_sdpa(q, k, v, causal=True), inputs=[normal(), normal(), normal()],
           shapes=[[(1, 4, 2, 3), (1, 4, 2, 3), (1, 4, 2, 3)]], dtypes=ALL_FLOATS,
           tol={"float32": (1e-5, 1e-5), "float16": (5e-3, 5e-3), "bfloat16": (5e-2, 5e-2)},
           op="scaled_dot_product_attention"),
    # Random functionals: forward here is the deterministic mode (eval); the sampling itself is
    # checked by frequencies in test_harness_random.py; gradients use a fixed seed.
    OpCase("dropout[eval]", lambda x: F.dropout(x, 0.3, training=False), lambda x: x,
           inputs=[normal()], shapes=[[(3, 4)]], op="dropout", grad=False),
    OpCase("dropout[train]", _seeded(lambda x: F.dropout(x, 0.4)), None, inputs=[normal()],
           dtypes=(), grad_shapes=[[(4, 5)]], op="dropout"),
    OpCase("dropout2d[train]", _seeded(lambda x: F.dropout2d(x, 0.5)), None, inputs=[normal()],
           dtypes=(), grad_shapes=[[(2, 4, 2, 2)]], op="dropout2d"),
    OpCase("alpha_dropout[train]", _seeded(lambda x: F.alpha_dropout(x, 0.3)), None,
           inputs=[normal()], dtypes=(), grad_shapes=[[(4, 5)]], op="alpha_dropout"),
    OpCase("gumbel_softmax[train]", _seeded(lambda x: F.gumbel_softmax(x, temperature=0.7)),
           None, inputs=[normal()], dtypes=(), grad_shapes=[[(3, 4)]], op="gumbel_softmax"),
]


def _bad(name, fn, *bad):
    return OpCase(f"{name}[bad]", fn, None, dtypes=(), grad=False, op=name, bad_inputs=list(bad))


NOT_TENSOR = ([1.0, 2.0],), TypeError, "must be a Tensor"
ACTIVATIONS = """relu relu6 selu silu mish softplus softsign tanhshrink hardsigmoid hardswish
hardtanh celu elu gelu leaky_relu""".split()

BAD_CASES = [_bad(n, getattr(F, n), NOT_TENSOR) for n in ACTIVATIONS] + [
    _bad("swish", F.swish, NOT_TENSOR),
    _bad("conv1d", F.conv1d, (lambda: (_t(1, 2, 5), _t(3, 4, 3)), ValueError, "channels"),
         (lambda: (_t(1, 2, 5, 5), _t(3, 2, 3)), ValueError, "3-D")),
    _bad("conv3d", F.conv3d, (lambda: (_t(1, 2, 5, 5, 5), _t(3, 4, 3, 3, 3)), ValueError,
                              "channels")),
    _bad("conv1d_transpose", F.conv1d_transpose,
         (lambda: (_t(1, 2, 5), _t(3, 4, 3)), ValueError, "channels")),
    _bad("conv2d_transpose", F.conv2d_transpose,
         (lambda: (_t(1, 2, 5, 5), _t(3, 4, 3, 3)), ValueError, "channels")),
    _bad("conv3d_transpose", F.conv3d_transpose,
         (lambda: (_t(1, 2, 5, 5, 5), _t(3, 4, 3, 3, 3)), ValueError, "channels")),
    _bad("max_pool1d", F.max_pool1d, (lambda: (_t(2, 3), 2), ValueError, "3-D")),
    _bad("avg_pool1d", F.avg_pool1d, (lambda: (_t(1, 2, 3), 5), ValueError, "larger")),
    _bad("avg_pool2d", F.avg_pool2d, (lambda: (_t(1, 2, 3), 2), ValueError, "4-D")),
    _bad("max_pool3d", F.max_pool3d, (lambda: (_t(1, 2, 3, 3), 2), ValueError, "5-D")),
    _bad("avg_pool3d", F.avg_pool3d, (lambda: (_t(1, 2, 3, 3, 3), 2), ValueError, "stride",
                                      {"stride": 0})),
    _bad("adaptive_avg_pool1d", F.adaptive_avg_pool1d, (lambda: (_t(2, 3), 2), ValueError, "3-D")),
    _bad("adaptive_avg_pool2d", F.adaptive_avg_pool2d,
         (lambda: (_t(1, 2, 3, 3), 0), ValueError, "output_size")),
    _bad("adaptive_avg_pool3d", F.adaptive_avg_pool3d, (lambda: (_t(2, 3, 4), 2), ValueError,
                                                        "5-D")),
    _bad("adaptive_max_pool1d", F.adaptive_max_pool1d, (lambda: (_t(2, 3), 2), ValueError, "3-D")),
    _bad("adaptive_max_pool2d", F.adaptive_max_pool2d, (lambda: (_t(2, 3), 2), ValueError, "4-D")),
    _bad("adaptive_max_pool3d", F.adaptive_max_pool3d, (lambda: (_t(2, 3, 3), 2), ValueError,
                                                        "5-D")),
    _bad("batch_norm", F.batch_norm,
         (lambda: (_t(2, 3), _t(4), _t(4), _t(4), _t(4)), ValueError, "4"),
         (lambda: (_t(2, 3), _t(3), _t(3)), ValueError, "", {"data_format": "XYZ"})),
    _bad("layer_norm", F.layer_norm, (lambda: (_t(2, 3), [4]), ValueError, "normalized_shape")),
    _bad("rms_norm", F.rms_norm, (lambda: (_t(2, 3), [4]), ValueError, "normalized_shape")),
    _bad("group_norm", F.group_norm, (lambda: (_t(2, 3, 4), 2), ValueError, "divisible")),
    _bad("instance_norm", F.instance_norm, (lambda: (_t(2),), ValueError, "shape")),
    _bad("local_response_norm", F.local_response_norm, (lambda: (_t(2, 3), 3), ValueError, "3-D")),
    _bad("prelu", F.prelu, (lambda: (_t(2, 3, 4), _t(5)), ValueError, "channels")),
    _bad("glu", F.glu, (lambda: (_t(2, 3),), ValueError, "even")),
    _bad("linear", F.linear, (lambda: (_t(2, 3), _t(4, 5)), ValueError, "4"),
         (lambda: (_t(2, 3), _t(3, 5), _t(4)), ValueError, "broadcast")),
    _bad("bilinear", F.bilinear, (lambda: (_t(2, 3), _t(2, 4), _t(5, 3, 3)), ValueError, "weight")),
    _bad("dropout", F.dropout, (lambda: (_t(2, 3),), ValueError, "p", {"p": 1.5}),
         (lambda: (_t(2, 3),), ValueError, "mode", {"mode": "bogus"})),
    _bad("dropout2d", F.dropout2d, (lambda: (_t(2, 3, 3, 3),), ValueError, "p", {"p": -0.5}),
         (lambda: (_t(2, 3),), ValueError, "4-D")),
    _bad("alpha_dropout", F.alpha_dropout, (lambda: (_t(2, 3),), ValueError, "p", {"p": 2.0})),
    _bad("gumbel_softmax", F.gumbel_softmax, (lambda: (_t(2, 3),), IndexError, "axis",
                                              {"axis": 4}),
         (lambda: (_t(2, 3),), ValueError, "temperature", {"temperature": 0.0})),
    _bad("mse_loss", F.mse_loss, (lambda: (_t(2, 3), _t(2, 4)), ValueError, "shape"),
         (lambda: (_t(2, 3), _t(2, 3)), ValueError, "reduction", {"reduction": "avg"})),
    _bad("l1_loss", F.l1_loss, (lambda: (_t(2, 3), _t(2, 3)), ValueError, "reduction",
                                {"reduction": "x"})),
    _bad("smooth_l1_loss", F.smooth_l1_loss, (lambda: (_t(2, 3), _t(2, 4)), ValueError, "shape")),
    _bad("binary_cross_entropy", F.binary_cross_entropy,
         (lambda: (_t(2, 3), _t(2, 4)), ValueError, "shape")),
    _bad("binary_cross_entropy_with_logits", F.binary_cross_entropy_with_logits,
         (lambda: (_t(2, 3), _t(2, 4)), ValueError, "shape")),
    _bad("kl_div", F.kl_div, (lambda: (_t(2, 3), _t(2, 4)), ValueError, "shape")),
    _bad("margin_ranking_loss", F.margin_ranking_loss,
         (lambda: (_t(2, 3), _t(2, 4), _t(2, 3)), ValueError, "shape")),
    _bad("nll_loss", F.nll_loss, (lambda: (_t(2, 3), oar.to_tensor(np.array([0, 5]))), IndexError,
                                  "out of range")),
    _bad("cross_entropy", F.cross_entropy,
         (lambda: (_t(2, 3), oar.to_tensor(np.array([0, 5]))), IndexError, "out of range"),
         (lambda: (_t(2, 3), _t(2, 4)), ValueError, "", {"soft_label": True})),
    _bad("cosine_similarity", F.cosine_similarity, (lambda: (_t(2, 3), _t(2, 4)), ValueError,
                                                    "shape")),
    _bad("pairwise_distance", F.pairwise_distance, (lambda: (_t(2, 3), _t(2, 4)), ValueError,
                                                    "shape")),
    _bad("normalize", F.normalize, (lambda: (_t(2, 3),), IndexError, "out of range",
                                    {"axis": 4})),
    _bad("upsample", F.upsample, (lambda: (_t(1, 2, 5, 5),), ValueError, "size",
                                  {"size": [-1, 2]})),
    _bad("scaled_dot_product_attention", F.scaled_dot_product_attention,
         (lambda: (_t(1, 2, 3, 4), _t(1, 2, 3, 5), _t(1, 2, 3, 5)), ValueError, "head_dim")),
]


@pytest.mark.parametrize("case", [c for c in CASES if c.dtypes], ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES + BAD_CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)
