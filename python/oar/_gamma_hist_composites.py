"""The regularized incomplete gamma functions gammainc / gammaincc and histogramdd,
composed of existing ops (Note [Compositions of Paddle functions]).

gammainc(x, y) = P(x, y) = gamma(x, y) / Gamma(x) (x the shape, y the upper limit) and
gammaincc = Q = 1 - P, evaluated in float64 as Numerical Recipes' gser/gcf: the series
e^-y y^x / Gamma(x + 1) sum_n y^n / ((x + 1)...(x + n)) where y < x + 1 (_SERIES_TERMS
terms), Lentz's continued fraction for Q elsewhere (_CF_TERMS steps); both branches run on
every element with the other side's inputs replaced by safe values, and `where` picks."""
import math

from ._C import DataType, Tensor, ops as _ops

__all__ = ["gammainc", "gammaincc", "gammainc_", "gammaincc_", "histogramdd"]
_TENSOR_METHODS = ["gammainc", "gammaincc", "gammainc_", "gammaincc_", "histogramdd"]
_SERIES_TERMS, _CF_TERMS, _TINY = 400, 200, 1e-300


def _gamma_args(x, y, op):
    import oar
    for arg, v in (("x", x), ("y", y)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}: {arg} must be a Tensor, got {type(v).__name__}")
        if not v.dtype.is_floating_point:
            raise TypeError(f"{op}: {arg} must be a float32/float64 tensor, got {v.dtype.name}")
    if x.dtype != y.dtype:
        raise TypeError(f"{op}: x and y must have one dtype, got {x.dtype.name} and {y.dtype.name}")
    if x.size and float(x.min()) < 0 or y.size and float(y.min()) < 0:
        raise ValueError(f"{op}: x and y must be non-negative, got minima "
                         f"{float(x.min()) if x.size else None} and "
                         f"{float(y.min()) if y.size else None}")
    return oar.broadcast_tensors([x.astype("float64"), y.astype("float64")])


def _lower_upper(x, y):
    """(P, Q) in float64 for broadcast x, y >= 0."""
    import oar
    series = y < x + 1
    one = oar.ones_like(x)
    # series side (other elements: x = 1, y = 0.5)
    xs, ys = oar.where(series, x, one), oar.where(series, y, one * 0.5)
    term = 1.0 / oar.where(xs > 0, xs, one)
    total, ap = term, xs
    for _ in range(_SERIES_TERMS):
        ap = ap + 1
        term = term * ys / ap
        total = total + term
    log_pre = xs * oar.log(oar.where(ys > 0, ys, one)) - ys - oar.lgamma(oar.where(xs > 0, xs, one))
    p_series = oar.where(ys > 0, total * oar.exp(log_pre), oar.zeros_like(ys))
    # continued fraction side (other elements: x = 1, y = 3)
    xc, yc = oar.where(series, one, x), oar.where(series, one * 3, y)
    b = yc + 1 - xc
    c = oar.full_like(b, 1.0 / _TINY)
    d = 1.0 / b
    h = d
    for i in range(1, _CF_TERMS + 1):
        an = -i * (i - xc)
        b = b + 2
        d = an * d + b
        d = oar.where(d.abs() < _TINY, oar.full_like(d, _TINY), d)
        c = b + an / c
        c = oar.where(c.abs() < _TINY, oar.full_like(c, _TINY), c)
        d = 1.0 / d
        h = h * d * c
    q_cf = oar.exp(xc * oar.log(yc) - yc - oar.lgamma(xc)) * h
    p = oar.where(series, p_series, 1 - q_cf)
    q = oar.where(series, 1 - p_series, q_cf)
    # x = 0: P = 1 for y > 0 (the distribution is a point mass at 0)
    x0 = x == 0
    p = oar.where(x0, oar.where(y > 0, one, oar.zeros_like(y)), p)
    q = oar.where(x0, 1 - p, q)
    return p.clip(0.0, 1.0), q.clip(0.0, 1.0)


def gammainc(x, y, name=None):
    """The regularized lower incomplete gamma function P(x, y), elementwise (broadcast)."""
    dtype = x.dtype if isinstance(x, Tensor) else None
    xb, yb = _gamma_args(x, y, "gammainc")
    return _lower_upper(xb, yb)[0].astype(dtype)


def gammaincc(x, y, name=None):
    """The regularized upper incomplete gamma function Q(x, y) = 1 - P(x, y), elementwise."""
    dtype = x.dtype if isinstance(x, Tensor) else None
    xb, yb = _gamma_args(x, y, "gammaincc")
    return _lower_upper(xb, yb)[1].astype(dtype)


def gammainc_(x, y, name=None):
    """In-place gammainc: x takes P(x, y)."""
    return x.copy_(gammainc(x, y))


def gammaincc_(x, y, name=None):
    """In-place gammaincc: x takes Q(x, y)."""
    return x.copy_(gammaincc(x, y))


def histogramdd(x, bins=10, ranges=None, density=False, weights=None, name=None):
    """The D-dimensional histogram of the points x [..., D]: (hist [b_1, ..., b_D], edges per
    dim). bins: an int, one int per dim, or one edge Tensor per dim; ranges: [lo_1, hi_1, ...]
    (default each dim's min and max); a value on a last edge counts in the last bin; weights
    [...] weigh the points; density divides by the total and the bin volumes."""
    import oar
    op = "histogramdd"
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must be a float Tensor, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if x.ndim < 2:
        raise ValueError(f"{op}: x must be [..., D] with at least 2 dims, got shape {list(x.shape)}")
    dims = x.shape[-1]
    pts = x.reshape([-1, dims]).astype("float64")
    n = pts.shape[0]
    if weights is not None:
        if not isinstance(weights, Tensor) or list(weights.shape) != list(x.shape[:-1]):
            raise ValueError(f"{op}: weights must be a Tensor of shape {list(x.shape[:-1])}, got "
                             f"{list(getattr(weights, 'shape', [])) or type(weights).__name__}")
        weights = weights.reshape([-1]).astype("float64")
    if isinstance(bins, int) and not isinstance(bins, bool):
        bins = [bins] * dims
    if not isinstance(bins, (list, tuple)) or len(bins) != dims:
        raise ValueError(f"{op}: bins must be an int or {dims} ints/edge Tensors, got {bins!r}")
    if ranges is not None:
        ranges = [float(r) for r in ranges]
        if len(ranges) != 2 * dims:
            raise ValueError(f"{op}: ranges must hold {2 * dims} numbers (lo, hi per dim), "
                             f"got {len(ranges)}")
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            e = b.astype("float64").reshape([-1])
            if e.shape[0] < 2 or bool((e[1:] < e[:-1]).any()):
                raise ValueError(f"{op}: the edges of dim {d} must be increasing, at least 2")
        else:
            if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                raise ValueError(f"{op}: bins[{d}] must be a positive int, got {b!r}")
            from .nn._errors import check_fits
            check_fits(op, f"{b} bins in dim {d}", 8 * b)
            if ranges is not None:
                lo, hi = ranges[2 * d], ranges[2 * d + 1]
            elif n:
                lo, hi = float(pts[:, d].min()), float(pts[:, d].max())
            else:
                lo, hi = 0.0, 1.0
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise ValueError(f"{op}: the range of dim {d} must be finite with lo <= hi, got "
                                 f"[{lo}, {hi}]")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            e = _ops.linspace(lo, hi, b + 1, DataType.float64, x.place)
        edges.append(e)
    counts = [e.shape[0] - 1 for e in edges]
    from .nn._errors import check_fits
    check_fits(op, f"a histogram of {counts} bins", 8 * math.prod(counts))
    flat = _ops.full([n], 0, DataType.int64, x.place)  # the results live beside x
    inside = _ops.full([n], True, DataType.bool, x.place)
    for d, e in enumerate(edges):
        v = pts[:, d].contiguous()
        idx = oar.searchsorted(e, v, right=True) - 1
        last = e.shape[0] - 2
        idx = oar.where(v == e[-1], oar.full_like(idx, last), idx)  # the last edge is closed
        ok = oar.logical_and(idx >= 0, idx <= last)
        inside = oar.logical_and(inside, ok)
        flat = flat * counts[d] + oar.where(ok, idx, oar.zeros_like(idx))
    w = inside.astype("float64") if weights is None else weights * inside.astype("float64")
    hist = oar.bincount(flat, weights=w, minlength=math.prod(counts)).reshape(counts)
    if density:
        total = hist.sum()
        volume = _ops.full(counts, 1.0, DataType.float64, x.place)
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = counts[d]
            volume = volume * (e[1:] - e[:-1]).reshape(shape)
        hist = hist / (total * volume)
    return hist.astype(x.dtype), [e.astype(x.dtype) for e in edges]
