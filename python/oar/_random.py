"""Random permutations (the other random creation functions live in _creation.py)."""
from . import _C
from ._dtype import convert_dtype

_ops = _C.ops


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0 .. n-1 (Paddle's paddle.randperm)."""
    return _ops.randperm(int(n), convert_dtype(dtype), None)


def bernoulli(x, p=None, name=None):
    """0/1 samples with probability x (or the scalar p), in x's dtype (Paddle's paddle.bernoulli)."""
    from ._creation import rand
    if p is not None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
        return (rand(x.shape, x.dtype) < float(p)).astype(x.dtype)
    if not x.dtype.is_floating_point:
        raise TypeError(f"bernoulli: x must be a floating-point tensor of probabilities, got {x.dtype}")
    if x.size:
        lo, hi = float(x.min()), float(x.max())
        if not (0.0 <= lo and hi <= 1.0):
            raise ValueError(f"bernoulli: x must hold probabilities in [0, 1], got values in "
                             f"[{lo}, {hi}]")
    return (rand(x.shape, x.dtype) < x.detach()).astype(x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None):
    """int64 category indices drawn from the (unnormalized) weights in the last dim of a 1-D
    or 2-D x. Without replacement: Gumbel top-k, i.e. sequential sampling without
    replacement in one pass."""
    from ._creation import rand
    if x.ndim not in (1, 2):
        raise ValueError(f"multinomial: x must be 1-D or 2-D, got shape {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"multinomial: x must be a floating-point tensor, got {x.dtype}")
    num_samples = int(num_samples)
    c = x.shape[-1]
    if num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be positive, got {num_samples}")
    w = x.detach().astype("float64").reshape([-1, c])
    wn = w.numpy()
    if wn.size == 0 or (wn < 0).any() or not (wn.sum(-1) > 0).all():
        raise ValueError("multinomial: every row of x must hold non-negative weights with a "
                         "positive sum")
    rows = w.shape[0]
    if replacement:
        cdf = w.cumsum(-1)
        cdf = cdf / cdf[:, c - 1:c]
        u = rand([rows, num_samples], "float64")
        out = _ops.clip(_search_right(cdf, u), 0, c - 1)
    else:
        nonzero = int((wn > 0).sum(-1).min())
        if num_samples > nonzero:
            raise ValueError(f"multinomial: num_samples ({num_samples}) exceeds the number of "
                             f"categories with non-zero weight ({nonzero}) without replacement")
        u = rand([rows, c], "float64").clip(1e-300, 1.0)
        keys = w.log() - (-u.log()).log()
        out = keys.topk(num_samples, axis=-1)[1]
    out = out.astype("int64")
    return out.reshape([num_samples]) if x.ndim == 1 else out


def _search_right(cdf, u):
    from . import searchsorted
    return searchsorted(cdf, u, right=True)
