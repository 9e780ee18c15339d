"""Modified Bessel functions of the first kind, orders 0 and 1 (i0, i0e, i1, i1e), composed
of elementwise ops so autograd differentiates them: the power series for |x| <= 20 (45 terms,
a relative error below 1e-16 there) and the asymptotic expansion e^z / sqrt(2 pi z) *
sum_k (-1)^k prod_j (4 nu^2 - (2j - 1)^2) / (k! (8 z)^k) beyond (12 terms)."""
import math

from ._C import Tensor

__all__ = ["i0", "i0e", "i1", "i1e"]
_TENSOR_METHODS = ["i0", "i0e", "i1", "i1e"]
_SPLIT, _SERIES_TERMS, _ASYM_TERMS = 20.0, 45, 12


def _bessel_i(x, nu, scaled, op):
    import oar
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        if x.dtype.name.startswith("complex") or x.dtype.name == "bool":
            raise TypeError(f"{op}: x must be a real number tensor, got {x.dtype.name}")
        x = x.astype(oar.get_default_dtype())
    ax = x.abs()
    small = ax <= _SPLIT
    # power series on the small side (inputs of the other side replaced by 0)
    y = oar.where(small, ax, oar.zeros_like(ax))
    q = (y / 2) ** 2
    term = (y / 2) if nu else oar.ones_like(y)
    total = term
    for k in range(1, _SERIES_TERMS + 1):
        term = term * q / float(k * (k + nu))
        total = total + term
    if scaled:
        total = total * oar.exp(-y)
    # asymptotic expansion on the large side (inputs of the other side replaced by 2 * split)
    z = oar.where(small, oar.full_like(ax, 2 * _SPLIT), ax)
    mu, coef, asym = 4.0 * nu * nu, 1.0, oar.ones_like(z)
    for k in range(1, _ASYM_TERMS + 1):
        coef *= -(mu - (2 * k - 1) ** 2) / (k * 8.0)
        asym = asym + coef / z ** k
    asym = asym / oar.sqrt(2 * math.pi * z)
    if not scaled:
        asym = asym * oar.exp(z)
    out = oar.where(small, total, asym)
    return out * oar.sign(x) if nu else out


def i0(x, name=None):
    """The modified Bessel function I0 of x, elementwise."""
    return _bessel_i(x, 0, False, "i0")


def i0e(x, name=None):
    """exp(-|x|) * I0(x), elementwise (no overflow for large |x|)."""
    return _bessel_i(x, 0, True, "i0e")


def i1(x, name=None):
    """The modified Bessel function I1 of x (odd in x), elementwise."""
    return _bessel_i(x, 1, False, "i1")


def i1e(x, name=None):
    """exp(-|x|) * I1(x), elementwise."""
    return _bessel_i(x, 1, True, "i1e")
