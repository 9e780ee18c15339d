"""Gamma and binomial sampling (Paddle's paddle.standard_gamma and paddle.binomial),
composed of oar ops and drawing from the global generator, so oar.seed / set_rng_state
reproduce the samples (the streams are not Paddle's: its kernels draw in their own order).

Both are vectorized rejection samplers: every round draws for all elements, and the
accepted ones are kept (same scheme as poisson in _random.py)."""
import math

from . import _C

_ops = _C.ops


def _check(op, name, x):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type(x).__name__}")


def _marsaglia_tsang(alpha):
    """Gamma(alpha, 1) draws for alpha >= 1 (float64): Marsaglia & Tsang's squeeze method."""
    from ._creation import _rand_on, _randn_on, zeros_like
    d = alpha - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    out = zeros_like(alpha)
    pending = _ops.full(alpha.shape, 1.0, alpha.dtype, alpha.place) > 0.5
    for _ in range(1000):  # the acceptance rate is >= 95% per round
        if not bool(pending.any()):
            break
        x = _randn_on(alpha.place, alpha.shape, "float64")
        u = _rand_on(alpha.place, alpha.shape, "float64")
        v = 1.0 + c * x
        v = v * v * v
        ok = v > 0.0
        vs = v.clip(min=1e-300)
        accept = pending.logical_and(ok).logical_and(
            u.clip(min=1e-300).log() < 0.5 * x * x + d - d * vs + d * vs.log())
        out = _ops.where(accept, d * vs, out)
        pending = pending.logical_and(accept.logical_not())
    return out


def standard_gamma(x, name=None):
    """Samples of Gamma(concentration = x, rate = 1), elementwise, in x's floating dtype.
    Not differentiable (as in Paddle)."""
    from ._creation import _rand_on
    _check("standard_gamma", "x", x)
    if not x.dtype.is_floating_point:
        raise TypeError(f"standard_gamma: x must be a floating-point tensor, got {x.dtype}")
    a = x.detach().astype("float64")
    if a.size == 0:
        return a.astype(x.dtype)
    lo = float(a.min())
    if not (lo > 0.0 and math.isfinite(float(a.max()))):
        raise ValueError(f"standard_gamma: x must hold finite positive concentrations, got a "
                         f"minimum of {lo}")
    small = a < 1.0
    g = _marsaglia_tsang(_ops.where(small, a + 1.0, a))
    if bool(small.any()):  # Gamma(a) = Gamma(a + 1) * U^(1/a)
        u = _rand_on(a.place, a.shape, "float64").clip(min=1e-300)
        g = _ops.where(small, g * (u.log() / a).exp(), g)
    return g.clip(min=float(_tiny(x.dtype))).astype(x.dtype)


def _tiny(dtype):
    import numpy as np
    return np.finfo(str(dtype).replace("paddle.", "")).tiny


def _binomial_inversion(n, p):
    """Sequential-search inversion, for n * p < 10 (p <= 1/2)."""
    from ._creation import _rand_on, zeros_like
    u = _rand_on(n.place, n.shape, "float64")
    q = 1.0 - p
    pk = (n * q.log()).exp()  # P(X = 0)
    cdf = pk
    k = zeros_like(n)
    more = (u > cdf).logical_and(k < n)
    ratio = p / q.clip(min=1e-300)
    for _ in range(200):  # P(X > 200) is far below float64 resolution when n p < 10
        if not bool(more.any()):
            break
        k1 = k + 1.0
        pk = _ops.where(more, pk * (n - k) / k1 * ratio, pk)
        k = _ops.where(more, k1, k)
        cdf = _ops.where(more, cdf + pk, cdf)
        more = more.logical_and(u > cdf).logical_and(k < n)
    return k


def _binomial_btrs(n, p):
    """Hormann's transformed rejection with squeeze (BTRS), for n * p >= 10 (p <= 1/2)."""
    from ._creation import _rand_on, zeros_like
    q = 1.0 - p
    spq = (n * p * q).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = (p / q).log()
    m = ((n + 1.0) * p).floor()
    h = (m + 1.0).lgamma() + (n - m + 1.0).lgamma()
    out = zeros_like(n)
    pending = _ops.full(n.shape, 1.0, n.dtype, n.place) > 0.5
    for _ in range(10000):
        if not bool(pending.any()):
            break
        u = _rand_on(n.place, n.shape, "float64") - 0.5
        v = _rand_on(n.place, n.shape, "float64")
        us = 0.5 - u.abs()
        k = ((2.0 * a / us + b) * u + c).floor()
        inside = (k >= 0.0).logical_and(k <= n)
        quick = (us >= 0.07).logical_and(v <= vr)
        kc = k.clip(min=0.0)
        kc = _ops.where(kc > n, n, kc)
        lhs = (v.clip(min=1e-300) * alpha / (a / (us * us) + b)).log()
        rhs = h - (kc + 1.0).lgamma() - (n - kc + 1.0).lgamma() + (kc - m) * lpq
        accept = pending.logical_and(inside).logical_and(quick.logical_or(lhs <= rhs))
        out = _ops.where(accept, k, out)
        pending = pending.logical_and(accept.logical_not())
    return out


def binomial(count, prob, name=None):
    """Samples of Binomial(count, prob), elementwise with broadcasting; int64 (Paddle's
    paddle.binomial). Not differentiable."""
    import numpy as np
    _check("binomial", "count", count)
    _check("binomial", "prob", prob)
    if str(count.dtype).endswith(("bool", "complex64", "complex128")):
        raise TypeError(f"binomial: count must be an integer or float tensor, got {count.dtype}")
    if count.dtype.is_floating_point and count.size and \
            not bool((count.detach() == count.detach().floor()).all()):
        raise ValueError("binomial: a float count must hold whole numbers, got "
                         f"{count.detach().numpy().reshape(-1)[:4].tolist()}...")
    if not prob.dtype.is_floating_point:
        raise TypeError(f"binomial: prob must be a floating-point tensor, got {prob.dtype}")
    try:
        shape = list(np.broadcast_shapes(tuple(count.shape), tuple(prob.shape)))
    except ValueError:
        raise ValueError(f"binomial: count of shape {list(count.shape)} and prob of shape "
                         f"{list(prob.shape)} cannot be broadcast together") from None
    n = count.detach().astype("float64").broadcast_to(shape)
    p = prob.detach().astype("float64").broadcast_to(shape)
    if n.size == 0:
        return n.astype("int64")
    if float(n.min()) < 0:
        raise ValueError(f"binomial: count must be non-negative, got {float(n.min())}")
    plo, phi = float(p.min()), float(p.max())
    if not (0.0 <= plo and phi <= 1.0):
        raise ValueError(f"binomial: prob must be in [0, 1], got values in [{plo}, {phi}]")
    flip = p > 0.5
    pp = _ops.where(flip, 1.0 - p, p)
    big = n * pp >= 10.0
    safe_p = pp.clip(min=1e-12)
    out = _binomial_inversion(_ops.where(big, n.clip(max=1.0), n), _ops.where(big, 0.0, pp))
    if bool(big.any()):
        nb = _ops.where(big, n, _ops.full_like(n, 100.0, n.dtype))
        pb = _ops.where(big, safe_p, _ops.full_like(n, 0.5, n.dtype))
        out = _ops.where(big, _binomial_btrs(nb, pb), out)
    out = _ops.where(pp <= 0.0, 0.0 * n, out)
    out = _ops.where(flip, n - out, out)
    return out.astype("int64")
