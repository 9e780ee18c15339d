"""linalg.eig / eigvals of general square matrices, and the gradient of complex eigh.

eig's forward is LAPACK's geev from the LAPACKE library Oar's kernels link (the routine
and library Paddle's CPU kernel runs, on the same column-major matrix, so eigenvalue order,
eigenvector normalisation and signs agree; NumPy's own LAPACK gives other signs), called
through ctypes: Oar has no eig op yet; the geev kernel and its op definition wait on branch
compat_kern_ops_wip for a full rebuild. Gradients (PyLayer, first order; PyTorch's
formulas, which Paddle's follow) are computed in complex128 NumPy:
- eig (distinct eigenvalues, unit-norm eigenvectors): with G = V^H V-bar,
  x-bar = V^-H (diag(l-bar) + (G - V^H V diag(Re diag G)) / conj(l_j - l_i)) V^H,
  the real part for a real x;
- eigh of a complex Hermitian x (the op's backward rule is written for real matrices):
  x-bar = V (F o (V^H V-bar) + diag(w-bar)) V^H, F = 1 / (w_j - w_i) off the diagonal."""
import ctypes

import numpy as np

from ._C import Tensor
from .autograd.py_layer import PyLayer

__all__ = ["eig", "eigvals", "complex_eigh"]

_COMPLEX_OF = {"float32": np.complex64, "complex64": np.complex64,
               "float64": np.complex128, "complex128": np.complex128}


def _mh(a):
    return np.conj(np.swapaxes(a, -1, -2))


_LAPACKE = None
_COL_MAJOR = 102


def _lapacke():
    global _LAPACKE
    if _LAPACKE is None:
        _LAPACKE = ctypes.CDLL("liblapacke.so.3")  # already loaded by oar._C
        for name in ("LAPACKE_sgeev", "LAPACKE_dgeev", "LAPACKE_cgeev", "LAPACKE_zgeev"):
            getattr(_LAPACKE, name).restype = ctypes.c_int
    return _LAPACKE


def _geev_one(a):
    """(w, v) of one square matrix a (float32/64 or complex64/128 ndarray) by ?geev."""
    n = a.shape[-1]
    lib, ptr, i = _lapacke(), ctypes.c_void_p, ctypes.c_int
    af = np.asfortranarray(a.copy())
    vr = np.zeros((n, n), a.dtype, order="F")
    vl = np.zeros(2, a.dtype)
    common = (i(_COL_MAJOR), ctypes.c_char(b"N"), ctypes.c_char(b"V"), i(n), ptr(af.ctypes.data), i(n))
    if a.dtype.kind == "c":
        w = np.zeros(n, a.dtype)
        fn = lib.LAPACKE_cgeev if a.dtype == np.complex64 else lib.LAPACKE_zgeev
        info = fn(*common, ptr(w.ctypes.data), ptr(vl.ctypes.data), i(1), ptr(vr.ctypes.data), i(n))
        return info, w, np.ascontiguousarray(vr)
    wr, wi = np.zeros(n, a.dtype), np.zeros(n, a.dtype)
    fn = lib.LAPACKE_sgeev if a.dtype == np.float32 else lib.LAPACKE_dgeev
    info = fn(*common, ptr(wr.ctypes.data), ptr(wi.ctypes.data), ptr(vl.ctypes.data), i(1),
              ptr(vr.ctypes.data), i(n))
    w = wr + 1j * wi
    v = vr.astype(w.dtype)
    j = 0
    while j < n:  # a complex pair l, conj(l) comes as the columns (re, im)
        if wi[j] != 0 and j + 1 < n:
            v[:, j] = vr[:, j] + 1j * vr[:, j + 1]
            v[:, j + 1] = np.conj(v[:, j])
            j += 1
        j += 1
    return info, w, v


def _geev(x, op):
    a = x.numpy()
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{op}: the input contains NaN or Inf; the QR algorithm does not "
                         "converge on non-finite values")
    cd = _COMPLEX_OF[x.dtype.name]
    n = a.shape[-1]
    w, v = np.zeros(a.shape[:-1], cd), np.zeros(a.shape, cd)
    if a.size == 0:
        return w, v
    flat_a = a.reshape(-1, n, n)
    flat_w, flat_v = w.reshape(-1, n), v.reshape(-1, n, n)
    for b in range(flat_a.shape[0]):  # one call per matrix of the batch
        info, flat_w[b], flat_v[b] = _geev_one(flat_a[b])
        if info != 0:
            raise ValueError(f"{op}: the QR algorithm did not converge (batch {b}, info {info})")
    return w, v


def _to_tensor(a, place):
    import oar
    return oar.to_tensor(np.ascontiguousarray(a), place=place)


class _Eig(PyLayer):
    @staticmethod
    def forward(ctx, x):
        w, v = _geev(x, "eig")
        ctx.dtype = x.dtype.name
        ctx.real_input = not x.dtype.name.startswith("complex")
        ctx.place = x.place
        ctx.w, ctx.v = w.astype(np.complex128), v.astype(np.complex128)
        return _to_tensor(w, x.place), _to_tensor(v, x.place)

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.w, ctx.v
        n = w.shape[-1]
        gw = np.zeros_like(w) if gw is None else gw.numpy().astype(np.complex128)
        gv = np.zeros_like(v) if gv is None else gv.numpy().astype(np.complex128)
        vh = _mh(v)
        g = vh @ gv
        re_diag = np.real(np.diagonal(g, 0, -2, -1))
        off = g - vh @ (v * re_diag[..., None, :])
        eye = np.eye(n)
        gaps = np.conj(w[..., None, :] - w[..., :, None]) + eye
        core = off * (1 - eye) / gaps + gw[..., None, :] * eye
        ga = np.linalg.solve(vh, core @ vh) if n else core
        return _to_tensor((np.real(ga) if ctx.real_input else ga).astype(ctx.dtype), ctx.place)


def eig(x, name=None):
    """(eigenvalues [*, n], eigenvectors [*, n, n] as unit-norm columns), complex64 for a
    float32/complex64 x, else complex128; differentiable where the eigenvalues are distinct."""
    _check(x, "eig")
    return _Eig.apply(x)


def eigvals(x, name=None):
    """The complex eigenvalues [*, n] of general square matrices (as Paddle's, without a
    gradient: use eig for one)."""
    import oar
    _check(x, "eigvals")
    w, _ = _geev(x, "eigvals")
    with oar.no_grad():
        return _to_tensor(w, x.place)


def _check(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{op}: x must have rank >= 2 ([*, n, n]), got shape {list(x.shape)}")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: x must be a stack of square matrices, got shape {list(x.shape)}")
    if x.dtype.name not in _COMPLEX_OF:
        raise TypeError(f"{op}: x must be float32 or float64 (or complex64/complex128), got "
                        f"{x.dtype.name}")


class _ComplexEigh(PyLayer):
    @staticmethod
    def forward(ctx, x, uplo):
        from . import _C
        w, v = _C.ops._eigh(x, uplo)
        ctx.w, ctx.v = w.numpy().astype(np.float64), v.numpy().astype(np.complex128)
        ctx.dtype, ctx.place = x.dtype.name, x.place
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.w, ctx.v
        gw = np.zeros_like(w) if gw is None else gw.numpy().astype(np.float64)
        gv = np.zeros_like(v) if gv is None else gv.numpy().astype(np.complex128)
        d = w[..., None, :] - w[..., :, None]
        eye = np.eye(w.shape[-1])
        f = (1 - eye) / (d + eye)
        inner = f * (_mh(v) @ gv) + gw[..., None, :] * eye
        return _to_tensor((v @ inner @ _mh(v)).astype(ctx.dtype), ctx.place)


def complex_eigh(x, uplo):
    """eigh's op on a complex x, with the gradient of a complex Hermitian matrix."""
    return _ComplexEigh.apply(x, uplo)
