"""Random permutations (the other random creation functions live in _creation.py)."""
import math

from . import _C, _trace_state
from ._dtype import convert_dtype

_ops = _C.ops


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0 .. n-1 (Paddle's paddle.randperm)."""
    return _ops.randperm(int(n), convert_dtype(dtype), None)


def bernoulli(x, p=None, name=None):
    """0/1 samples with probability x (or the scalar p), in x's dtype (Paddle's paddle.bernoulli)."""
    from ._creation import _rand_on
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"bernoulli: argument 'x' must be a Tensor, got {type(x).__name__}")
    if p is not None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
        return (_rand_on(x.place, _trace_state.sizes_of(x), x.dtype) < float(p)).astype(x.dtype)
    if not x.dtype.is_floating_point:
        raise TypeError(f"bernoulli: x must be a floating-point tensor of probabilities, got {x.dtype}")
    tracer = _trace_state.tracer()
    traced = tracer is not None and tracer.is_traced(x)
    if x.size and not traced:  # a traced x has no value yet to check
        lo, hi = float(x.min()), float(x.max())
        if not (0.0 <= lo and hi <= 1.0):
            raise ValueError(f"bernoulli: x must hold probabilities in [0, 1], got values in "
                             f"[{lo}, {hi}]")
    return (_rand_on(x.place, _trace_state.sizes_of(x), x.dtype) < x.detach()).astype(x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None):
    """int64 category indices drawn from the (unnormalized) weights in the last dim of a 1-D
    or 2-D x. Without replacement: Gumbel top-k, i.e. sequential sampling without
    replacement in one pass."""
    from ._creation import _rand_on
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"multinomial: argument 'x' must be a Tensor, got {type(x).__name__}")
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
        u = _rand_on(x.place, [rows, num_samples], "float64")
        out = _ops.clip(_search_right(cdf, u), 0, c - 1)
    else:
        nonzero = int((wn > 0).sum(-1).min())
        if num_samples > nonzero:
            raise ValueError(f"multinomial: num_samples ({num_samples}) exceeds the number of "
                             f"categories with non-zero weight ({nonzero}) without replacement")
        u = _rand_on(x.place, [rows, c], "float64").clip(1e-300, 1.0)
        keys = w.log() - (-u.log()).log()
        out = keys.topk(num_samples, axis=-1)[1]
    out = out.astype("int64")
    return out.reshape([num_samples]) if x.ndim == 1 else out


def _search_right(cdf, u):
    from . import searchsorted
    return searchsorted(cdf, u, right=True)


# ---- Poisson sampling (Paddle's paddle.poisson): composed of oar ops, drawing its uniforms
# from the global generator, so oar.seed / set_rng_state reproduce the samples.
_POISSON_SWITCH = 10.0  # rates below: inversion by sequential search; at or above: PTRS


def _poisson_small(lam):
    """Inversion: the smallest k with P(X <= k) >= u, for every element (rates < 10)."""
    from ._creation import _rand_on, zeros_like
    u = _rand_on(lam.place, lam.shape, "float64")
    p = (-lam).exp()  # P(X = 0)
    cdf = p
    k = zeros_like(lam)
    more = u > cdf
    for _ in range(1000):  # P(X > 1000) is far below float64 resolution for rates < 10
        if not bool(more.any()):
            break
        k = _ops.where(more, k + 1.0, k)
        p = p * lam / k.clip(min=1.0)
        cdf = _ops.where(more, cdf + p, cdf)
        more = more.logical_and(u > cdf)
    return k


def _poisson_ptrs(lam):
    """Hormann's transformed rejection with squeeze (PTRS), vectorized: every round draws
    two uniforms per pending element and keeps the accepted candidates (rates >= 10)."""
    from ._creation import _rand_on, zeros_like
    slam, loglam = lam.sqrt(), lam.log()
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = (1.1239 + 1.1328 / (b - 3.4)).log()
    vr = 0.9277 - 3.6224 / (b - 2.0)
    out = zeros_like(lam)
    pending = _ops.full(lam.shape, 1.0, lam.dtype, lam.place) > 0.5
    for _ in range(10000):
        if not bool(pending.any()):
            break
        u = _rand_on(lam.place, lam.shape, "float64") - 0.5
        v = _rand_on(lam.place, lam.shape, "float64")
        us = 0.5 - u.abs()
        k = ((2.0 * a / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07).logical_and(v <= vr)
        feasible = (k >= 0.0).logical_and((us >= 0.013).logical_or(v <= us))
        lhs = v.clip(min=1e-300).log() + log_inv_alpha - (a / (us * us) + b).log()
        rhs = -lam + k * loglam - (k.clip(min=0.0) + 1.0).lgamma()
        accept = pending.logical_and(quick.logical_or(feasible.logical_and(lhs <= rhs)))
        out = _ops.where(accept, k, out)
        pending = pending.logical_and(accept.logical_not())
    return out


def poisson(x, name=None):
    """Samples of Poisson(rate = x), elementwise, in x's (floating-point) dtype. Not
    differentiable (as in Paddle, the samples carry no gradient to the rates)."""
    from ._C import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"poisson: argument 'x' must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"poisson: x must be a floating-point tensor of rates, got {x.dtype}")
    lam = x.detach().astype("float64")
    if lam.size == 0:
        return lam.astype(x.dtype)
    lo, hi = float(lam.min()), float(lam.max())
    if not (lo >= 0.0 and math.isfinite(hi)):
        bad = lo if not lo >= 0.0 else hi
        raise ValueError(f"poisson: x must hold finite non-negative rates, got {bad}")
    small = lam < _POISSON_SWITCH
    out = _poisson_small(_ops.where(small, lam, lam.clip(max=1.0)))
    if hi >= _POISSON_SWITCH:
        big = _poisson_ptrs(_ops.where(small, lam.clip(min=_POISSON_SWITCH), lam))
        out = _ops.where(small, out, big)
    return out.astype(x.dtype)


def _install_methods():
    from ._C import Tensor
    Tensor.multinomial = multinomial


_install_methods()


# ---------------------------------------------------------------- the generator
class Generator:
    """Paddle's / PyTorch's Generator API over Oar's random generator.

    Every random op of Oar (uniform, normal, randint, randperm, dropout, bernoulli, ...)
    draws from one process-wide generator: Paddle's CPU stream (a std::mt19937_64 seeded
    the way Paddle seeds it, so seeded Paddle scripts give the same numbers).
    A Generator is a handle on that generator: `Generator()` and `oar.seed(s)` return the
    same object (`oar.default_generator()`); independent streams are not supported yet.

        g = oar.seed(2024)            # Paddle: paddle.seed returns the Generator
        state = g.get_state()
        a = oar.rand([3])
        g.set_state(state)
        assert (oar.rand([3]) == a).all()
    """
    _default = None

    def __new__(cls, *args, **kwargs):
        if cls._default is None:
            cls._default = super().__new__(cls)
        return cls._default

    def __init__(self, place=None):
        pass  # one shared generator: construction only returns the handle

    def manual_seed(self, seed):
        """Restart the stream from `seed`; returns self, as PyTorch does."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            try:
                import numpy as _np
                if isinstance(seed, _np.integer):
                    seed = int(seed)
            except ImportError:  # pragma: no cover
                pass
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"Generator.manual_seed: seed must be an int, got "
                            f"{type(seed).__name__}")
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise ValueError(f"Generator.manual_seed: seed {seed} does not fit in 64 bits")
        _ops._seed(seed % 2 ** 64)
        return self

    def seed(self):
        """Seed from the OS's entropy (non-deterministic); returns the new seed."""
        import os
        s = int.from_bytes(os.urandom(8), "little") >> 1  # keep it a positive int64
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the current stream started from."""
        return int(_ops._get_rng_state()[0])

    def get_state(self):
        """A snapshot of the generator: [seed, engine state] (a new list; pass it to set_state)."""
        return list(_ops._get_rng_state())

    def set_state(self, state):
        """Restore a snapshot from get_state; the next draws repeat those that followed it."""
        _ops._set_rng_state(list(state) if isinstance(state, tuple) else state)
        return self

    # Paddle's spellings
    def get_rng_state(self):  # noqa: D102
        return self.get_state()

    def set_rng_state(self, state):  # noqa: D102
        return self.set_state(state)

    def __repr__(self):
        return f"Generator(initial_seed={self.initial_seed()})"


def default_generator():
    """The Generator every random op draws from."""
    return Generator()
