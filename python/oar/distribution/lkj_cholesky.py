"""LKJ distribution over Cholesky factors of correlation matrices."""
import math
import numbers

import numpy as np

import oar
from oar._creation import _full_on
from .beta import Beta
from .._creation import _arange_on
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0, sample_method='onion'): the distribution of L,
    the lower Cholesky factor of a dim x dim correlation matrix C = L L^T with density
    proportional to det(C)^(concentration - 1) (Lewandowski, Kurowicka & Joe, 2009).

    Samplers: 'onion' (Ghosh & Henderson's onion method) and 'cvine' (partial
    correlations along a C-vine, each a shifted Beta draw)."""

    def __init__(self, dim, concentration=1.0, sample_method="onion"):
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 2:
            raise ValueError(f"LKJCholesky: argument 'dim' must be an int >= 2, got {dim!r}")
        if sample_method not in ("onion", "cvine"):
            raise ValueError(f"LKJCholesky: argument 'sample_method' must be 'onion' or "
                             f"'cvine', got {sample_method!r}")
        self.dim = int(dim)
        self.sample_method = sample_method
        (self.concentration,) = to_params("LKJCholesky", concentration=concentration)
        check("LKJCholesky", "concentration", self.concentration, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.concentration.dtype)
        super().__init__(tuple(self.concentration.shape), (self.dim, self.dim))
        c = self.concentration.unsqueeze(-1)
        d = self.dim
        if sample_method == "onion":
            # row i (i >= 1) has squared length y_i ~ Beta(i / 2, conc + (d - 1 - i) / 2)
            i = _arange_on(c.place, d, self._dtype, start=1)
            self._beta = Beta(0.5 * i + 0.0 * c, c + 0.5 * (d - 2) - 0.5 * (i - 1.0))
        else:
            # partial correlation of pair (i, j), j < i: 2 Beta(b, b) - 1, b = conc + (d-2-j)/2
            rows, cols = np.tril_indices(d, -1)
            self._tril = (rows, cols)
            b = c + 0.5 * oar.to_tensor((d - 2 - cols).astype(self._dtype), place=c.place)
            self._beta = Beta(b, b)

    def sample(self, shape=()):
        shape = sample_shape("LKJCholesky", shape)
        with oar.no_grad():
            if self.sample_method == "onion":
                return self._onion(shape)
            return self._cvine(shape)

    def _onion(self, shape):
        d = self.dim
        out_shape = list(shape) + list(self._batch_shape)
        y = self._beta.sample(shape)  # [..., d - 1]
        z = self._normal(out_shape + [d, d]).tril(-1)[..., 1:, :]
        norm = (z * z).sum(-1, keepdim=True).sqrt()
        w = (y.unsqueeze(-1).sqrt()) * z / norm  # rows 1.. of L (off-diagonal part)
        first = _full_on(self.concentration.place, out_shape + [1, d], 0.0, self._dtype)
        w = oar.concat([first, w], axis=-2)
        diag = (1.0 - (w * w).sum(-1)).clip(min=float(np.finfo(self._dtype).tiny)).sqrt()
        return w + oar.diag_embed(diag)

    def _cvine(self, shape):
        d = self.dim
        out_shape = list(shape) + list(self._batch_shape)
        r = 2.0 * self._beta.sample(shape) - 1.0  # [..., d (d - 1) / 2] partial correlations
        rows, cols = self._tril
        # L[i, j] = r_ij * sqrt(1 - sum_{k<j} L[i, k]^2), L[i, i] = sqrt(remaining)
        pc = np.zeros((d, d), dtype=np.int64) - 1
        pc[rows, cols] = np.arange(len(rows))
        out_rows, place = [], self.concentration.place
        for i in range(d):
            left = _full_on(place, out_shape, 1.0, self._dtype)
            row = []
            for j in range(i):
                v = r[..., int(pc[i, j])] * left.sqrt()
                left = (left - v * v).clip(min=0.0)
                row.append(v)
            row.append(left.sqrt())
            row += [_full_on(place, out_shape, 0.0, self._dtype)] * (d - i - 1)
            out_rows.append(oar.stack(row, axis=-1))
        return oar.stack(out_rows, axis=-2)

    def log_prob(self, value):
        """log p(L) = sum_{i >= 1} (d - i - 1 + 2 (conc - 1)) log L_ii - log Z(conc, d)."""
        value = self._value(value)
        d = self.dim
        diag = oar.diagonal(value, axis1=-2, axis2=-1)[..., 1:]
        c = self.concentration
        order = _arange_on(c.place, d + 1, self._dtype, start=2)
        coef = 2.0 * (c.unsqueeze(-1) - 1.0) + d - order
        unnorm = (coef * diag.log()).sum(-1)
        dm1 = d - 1
        alpha = c + 0.5 * dm1
        # log Z = (d-1)/2 log pi + mvlgamma(alpha - 1/2, d - 1) - (d-1) lgamma(alpha)
        mvl = 0.25 * dm1 * (dm1 - 1) * math.log(math.pi)
        for j in range(dm1):
            mvl = mvl + (alpha - 0.5 - 0.5 * j).lgamma()
        log_z = 0.5 * dm1 * math.log(math.pi) + mvl - dm1 * alpha.lgamma()
        return unnorm - log_z
