"""The base class of every distribution, and the argument handling they share.

Note [Distributions] in docs/notes/distribution.md: parameters become tensors of one
floating dtype (a Tensor keeps its dtype, Python numbers and lists take the default float
dtype, NumPy arrays keep float64/float32), are broadcast to one batch shape, and every
formula is composed of differentiable oar ops, so log_prob, entropy and rsample carry
gradients to the parameters."""
import math
import numbers

import numpy as np

import oar
from oar import _trace_state
from oar._creation import _float_dtype, _randn_on, _uniform as _uniform_on

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _dtype_name(dtype):
    return str(dtype).replace("paddle.", "").replace("oar.", "")


def _is_tensor(x):
    return isinstance(x, oar.Tensor)


def _traced(*tensors):
    """True while converting to static (values are not known yet, so no value checks)."""
    tracer = _trace_state.tracer()
    return tracer is not None and any(tracer.is_traced(t) for t in tensors)


def to_params(owner, **params):
    """Convert the named parameters of distribution `owner` to tensors of one floating
    dtype, broadcast to one shape; returns them in the given order."""
    dtype = None
    for name, v in params.items():
        if _is_tensor(v):
            if not (v.dtype.is_floating_point or _dtype_name(v.dtype).startswith(("int", "uint"))):
                raise TypeError(f"{owner}: argument '{name}' must be a floating-point tensor, "
                                f"got dtype {_dtype_name(v.dtype)}")
            if v.dtype.is_floating_point:
                d = _dtype_name(v.dtype)
                dtype = d if dtype is None or _FLOATS.index(d) > _FLOATS.index(dtype) else dtype
        elif isinstance(v, np.ndarray) and v.dtype in (np.float32, np.float64):
            d = str(v.dtype)
            dtype = d if dtype is None or _FLOATS.index(d) > _FLOATS.index(dtype) else dtype
        elif isinstance(v, bool) or not isinstance(v, (numbers.Real, list, tuple, np.ndarray,
                                                       np.number)):
            raise TypeError(f"{owner}: argument '{name}' must be a float, list, numpy.ndarray "
                            f"or Tensor, got {type(v).__name__}")
    dtype = dtype or oar.get_default_dtype()
    place = next((v.place for v in params.values() if _is_tensor(v)), None)  # numbers join it
    out = []
    for name, v in params.items():
        if _is_tensor(v):
            t = v if _dtype_name(v.dtype) == dtype else v.astype(dtype)
        else:
            try:
                t = oar.to_tensor(np.asarray(v, dtype=dtype), place=place)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{owner}: argument '{name}' could not be converted to a "
                                f"{dtype} tensor: {e}") from None
        out.append(t)
    shapes = [list(t.shape) for t in out]
    try:
        shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        desc = ", ".join(f"{n}={s}" for n, s in zip(params, shapes))
        raise ValueError(f"{owner}: the parameter shapes do not broadcast: {desc}") from None
    return [t if list(t.shape) == shape else oar.broadcast_to(t, shape) for t in out]


def check(owner, name, t, ok, what):
    """Raise ValueError naming the owner, the argument and an offending value unless
    `ok(array)` holds for every element of t (skipped while tracing)."""
    if t.size == 0 or _traced(t):
        return
    a = t.detach().numpy()
    good = ok(a)
    if not bool(np.all(good)):
        bad = np.asarray(a)[~np.asarray(np.broadcast_to(good, np.shape(a)))]
        raise ValueError(f"{owner}: argument '{name}' must be {what}, got {bad.flat[0]!r}")


def sample_shape(owner, shape):
    """Validate a sample shape argument; returns it as a tuple of ints."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    if _is_tensor(shape):
        shape = shape.tolist()
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{owner}.sample: shape must be a list or tuple of ints, got "
                        f"{type(shape).__name__}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0:
            raise ValueError(f"{owner}.sample: shape must hold non-negative ints, got "
                             f"{list(shape)}")
        out.append(int(d))
    return tuple(out)


def sum_rightmost(value, n):
    """Sum the n rightmost dims of value."""
    return value.sum(list(range(-n, 0))) if n > 0 else value


class Distribution:
    """The abstract base class of probability distributions (Paddle's
    paddle.distribution.Distribution): batch_shape/event_shape, sampling, densities."""

    def __init__(self, batch_shape=(), event_shape=()):
        self._batch_shape = tuple(int(d) for d in batch_shape)
        self._event_shape = tuple(int(d) for d in event_shape)

    @property
    def batch_shape(self):
        """The shape over which parameters are batched (a tuple)."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw (a tuple)."""
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__}.mean is not defined")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__}.variance is not defined")

    @property
    def stddev(self):
        """Standard deviation: the square root of variance."""
        return self.variance.sqrt()

    def sample(self, shape=()):
        """Draws of shape `shape + batch_shape + event_shape`, without gradient."""
        with oar.no_grad():
            return self.rsample(shape)

    def rsample(self, shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler "
                                  "(rsample)")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__}.entropy is not defined")

    def kl_divergence(self, other):
        """KL(self || other), through the registered pairwise table (see register_kl)."""
        from .kl import kl_divergence
        return kl_divergence(self, other)

    def prob(self, value):
        """Probability density (or mass) at value."""
        return self.log_prob(value).exp()

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not defined")

    def probs(self, value):
        """Paddle's older name of prob."""
        return self.prob(value)

    def _extend_shape(self, shape):
        return tuple(shape) + self._batch_shape + self._event_shape

    def _value(self, value, dtype=None):
        """value as a tensor of the parameters' dtype (Python numbers and lists converted)."""
        dtype = dtype or self._dtype
        if not _is_tensor(value):
            try:
                return oar.to_tensor(np.asarray(value, dtype=dtype), place=self._place())
            except (TypeError, ValueError):
                raise TypeError(f"{type(self).__name__}: argument 'value' must be a Tensor or "
                                f"a number, got {type(value).__name__}") from None
        if _dtype_name(value.dtype) != dtype:
            return value.astype(dtype)
        return value

    def _place(self):
        """The parameters' place (that of the first tensor attribute, or of a base
        distribution's); None (the current device) when there is none."""
        for v in vars(self).values():
            if _is_tensor(v):
                return v.place
            if isinstance(v, Distribution):
                place = v._place()
                if place is not None:
                    return place
        return None

    def _uniform(self, shape, low=0.0, high=1.0):
        """Uniform draws in [low, high) from the global generator, in the parameters' dtype,
        on their place."""
        return _uniform_on(list(shape), _float_dtype(self._dtype), low, high, 0, self._place())

    def _normal(self, shape):
        """Standard normal draws from the global generator, in the parameters' dtype, on
        their place."""
        return _randn_on(self._place(), list(shape), self._dtype)

    def __repr__(self):
        return (f"{type(self).__name__}(batch_shape={list(self._batch_shape)}, "
                f"event_shape={list(self._event_shape)})")


class ExponentialFamily(Distribution):
    """Distributions p(x) = h(x) exp(<eta, T(x)> - A(eta)): entropy (and KL between two
    members of one family) follow from the log normalizer A by autograd (Bregman
    divergence), so a subclass need only give _natural_parameters, _log_normalizer and
    _mean_carrier_measure."""

    @property
    def _natural_parameters(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_parameters):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """H = A(eta) - <eta, grad A(eta)> - E[log h(x)]."""
        etas = [p.detach().clone() for p in self._natural_parameters]
        for p in etas:
            p.stop_gradient = False
        log_norm = self._log_normalizer(*etas)
        grads = oar.grad(log_norm.sum(), etas, create_graph=True)
        ent = -self._mean_carrier_measure + log_norm
        for p, g in zip(etas, grads):
            ent = ent - sum_rightmost(p * g, p.ndim - log_norm.ndim)
        return ent


LOG_2PI = math.log(2.0 * math.pi)
