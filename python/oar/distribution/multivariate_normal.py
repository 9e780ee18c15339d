"""Multivariate normal distribution."""
import numpy as np

import oar
from .distribution import LOG_2PI, Distribution, _dtype_name, _is_tensor, sample_shape


def _tri_solve(L, b):
    """L^-1 b for lower-triangular L."""
    return oar.linalg.triangular_solve(L, b, upper=False)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the
    k-dimensional normal (k the last axis of loc). Exactly one of the three matrix
    arguments is given; covariance and precision must be symmetric positive definite,
    scale_tril lower-triangular with a positive diagonal."""

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: exactly one of covariance_matrix, "
                             f"precision_matrix or scale_tril must be given, got "
                             f"{[n for n, _ in given] or 'none'}")
        name, mat = given[0]
        for n, v in (("loc", loc), (name, mat)):
            if not _is_tensor(v) or not v.dtype.is_floating_point:
                raise TypeError(f"MultivariateNormal: argument '{n}' must be a floating-point "
                                f"Tensor, got {getattr(v, 'dtype', type(v).__name__)}")
        if loc.ndim < 1:
            raise ValueError("MultivariateNormal: argument 'loc' must be at least 1-D")
        if mat.ndim < 2 or mat.shape[-1] != mat.shape[-2]:
            raise ValueError(f"MultivariateNormal: argument '{name}' must be a (batch of) "
                             f"square matrices, got shape {list(mat.shape)}")
        if mat.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: argument '{name}' of shape "
                             f"{list(mat.shape)} does not match loc of shape {list(loc.shape)}")
        if mat.dtype != loc.dtype:
            raise TypeError(f"MultivariateNormal: loc ({_dtype_name(loc.dtype)}) and {name} "
                            f"({_dtype_name(mat.dtype)}) must have one dtype")
        self._dtype = _dtype_name(loc.dtype)
        k = loc.shape[-1]
        try:
            batch = list(np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(mat.shape[:-2])))
        except ValueError:
            raise ValueError(f"MultivariateNormal: the batch shapes of loc {list(loc.shape)} "
                             f"and {name} {list(mat.shape)} do not broadcast") from None
        self.loc = loc.broadcast_to(batch + [k])
        try:
            if name == "scale_tril":
                tril = mat
            elif name == "covariance_matrix":
                tril = oar.linalg.cholesky(mat)
            else:  # the inverse of the precision's Cholesky factor, transposed
                tril = oar.linalg.cholesky(oar.linalg.inv(mat))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"MultivariateNormal: argument '{name}' must be positive "
                             f"definite ({e})") from None
        self._unbroadcasted_scale_tril = tril
        self.scale_tril = tril.broadcast_to(batch + [k, k])
        super().__init__(tuple(batch), (k,))

    @property
    def covariance_matrix(self):
        L = self.scale_tril
        return L.matmul(L.transpose(list(range(L.ndim - 2)) + [L.ndim - 1, L.ndim - 2]))

    @property
    def precision_matrix(self):
        return oar.linalg.inv(self.covariance_matrix)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return (self.scale_tril * self.scale_tril).sum(-1)

    def rsample(self, shape=()):
        """loc + L eps, eps ~ N(0, I): differentiable in loc and the matrix."""
        shape = self._extend_shape(sample_shape("MultivariateNormal", shape))
        eps = self._normal(shape)
        return self.loc + self._unbroadcasted_scale_tril.matmul(eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return oar.diagonal(self._unbroadcasted_scale_tril, axis1=-2, axis2=-1).log().sum(-1)

    def log_prob(self, value):
        value = self._value(value)
        diff = value - self.loc
        shape = list(diff.shape)
        L = self._unbroadcasted_scale_tril
        L = L.broadcast_to(shape[:-1] + list(L.shape[-2:]))
        z = _tri_solve(L, diff.unsqueeze(-1)).squeeze(-1)
        k = shape[-1]
        return -0.5 * (k * LOG_2PI + (z * z).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + LOG_2PI) + self._half_log_det()
        return h.broadcast_to(list(self._batch_shape)) if self._batch_shape else h

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)


def _kl_mvn(p, q):
    """KL(p || q) = log|Lq| - log|Lp| + (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - k) / 2."""
    if p.event_shape != q.event_shape:
        raise ValueError(f"kl_divergence: MultivariateNormal event shapes differ: "
                         f"{list(p.event_shape)} and {list(q.event_shape)}")
    k = p.event_shape[0]
    Lp, Lq = p.scale_tril, q.scale_tril
    batch = list(np.broadcast_shapes(tuple(Lp.shape[:-2]), tuple(Lq.shape[:-2])))
    Lp, Lq = Lp.broadcast_to(batch + [k, k]), Lq.broadcast_to(batch + [k, k])
    m = _tri_solve(Lq, Lp)
    trace = (m * m).sum([-2, -1])
    d = (q.loc - p.loc).broadcast_to(batch + [k])
    z = _tri_solve(Lq, d.unsqueeze(-1)).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (trace + (z * z).sum(-1) - k) \

