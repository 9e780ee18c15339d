"""linalg.lu (the lu op: LAPACK's getrf, with a gradient kernel), and lu_unpack / lu_solve,
matrix_exp and householder_product composed of differentiable ops: matrix_exp by scaling and
squaring of a degree-18 Taylor polynomial; svd_lowrank and pca_lowrank by a randomized range
finder."""
import math

import numpy as np

from ._C import Tensor, ops as _ops
from ._creation import _full_on, _randn_on

__all__ = ["lu", "lu_unpack", "lu_solve", "matrix_exp", "householder_product", "ormqr",
           "svd_lowrank", "pca_lowrank"]
_TENSOR_METHODS = ["lu", "lu_unpack", "householder_product", "ormqr", "svd_lowrank",
                   "pca_lowrank"]


def _matrix(x, op, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{op}: {arg} must have rank >= 2 ([*, m, n]), got shape {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: {arg} must be float32 or float64, got {x.dtype.name}")


def lu(x, pivot=True, get_infos=False, name=None):
    """(LU, pivots[, infos]): x = P L U with L unit lower (below LU's diagonal) and U upper;
    pivots are LAPACK's 1-based row interchanges (int32); infos[i] > 0 marks a zero pivot."""
    op = "lu"
    _matrix(x, op)
    if not pivot:
        raise ValueError("lu: pivot=False (LU without pivoting) is only supported on GPUs in "
                         "Paddle, and not in Oar")
    out, pivots, infos = _ops._lu(x)
    return (out, pivots, infos) if get_infos else (out, pivots)


def _perm_matrix(pivots, m, dtype, place):
    """P (on place) with x = P L U from LAPACK pivots [*, k] (1-based row interchanges)."""
    import oar
    piv = pivots.numpy().astype(np.int64).reshape(-1, pivots.shape[-1])
    perms = np.tile(np.arange(m), (piv.shape[0], 1))
    for bi in range(piv.shape[0]):
        for i, p in enumerate(piv[bi]):  # k interchanges, k a dim of the pivots
            perms[bi, [i, p - 1]] = perms[bi, [p - 1, i]]
    eye = np.eye(m)
    mats = np.stack([eye[perm].T for perm in perms])  # P[perm[i], i] = 1
    return oar.to_tensor(mats.reshape(list(pivots.shape[:-1]) + [m, m]), dtype, place)


def _check_pivots(pivots, lu_t, op):
    if not isinstance(pivots, Tensor) or pivots.dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op}: pivots must be an int32/int64 Tensor, got "
                        f"{getattr(pivots, 'dtype', type(pivots).__name__)}")
    m, n = lu_t.shape[-2:]
    if list(pivots.shape) != list(lu_t.shape[:-2]) + [min(m, n)]:
        raise ValueError(f"{op}: pivots must have shape {list(lu_t.shape[:-2]) + [min(m, n)]}, "
                         f"got {list(pivots.shape)}")
    if pivots.size and (int(pivots.min()) < 1 or int(pivots.max()) > m):
        raise ValueError(f"{op}: pivots must be 1-based row indices in [1, {m}]")


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """(P, L, U) from lu's (LU, pivots): x = P @ L @ U; P is [*, m, m], L [*, m, k] unit lower,
    U [*, k, n], k = min(m, n). An unrequested part is None."""
    import oar
    op = "lu_unpack"
    _matrix(x, op)
    _check_pivots(y, x, op)
    m, n = x.shape[-2:]
    k = min(m, n)
    L = U = P = None
    if unpack_ludata:
        L = oar.tril(x[..., :, :k], -1) + _ops.eye(m, k, x.dtype, x.place)
        U = oar.triu(x[..., :k, :])
    if unpack_pivots:
        P = _perm_matrix(y, m, x.dtype, x.place)
    return P, L, U


def lu_solve(b, lu, pivots, trans="N", name=None):
    """x with A x = b (trans 'N') or A^T x = b ('T', 'C'), A = P L U given by lu()."""
    import oar
    op = "lu_solve"
    _matrix(lu, op, "lu")
    _matrix(b, op, "b")
    _check_pivots(pivots, lu, op)
    if trans not in ("N", "T", "C"):
        raise ValueError(f"{op}: trans must be 'N', 'T' or 'C', got {trans!r}")
    m, n = lu.shape[-2:]
    if m != n or b.shape[-2] != m:
        raise ValueError(f"{op}: lu must be square and b's rows match it, got lu "
                         f"{list(lu.shape)} and b {list(b.shape)}")
    P, L, U = lu_unpack(lu, pivots)
    ts = oar.linalg.triangular_solve
    if trans == "N":
        y = ts(L, oar.matmul(P, b, transpose_x=True), upper=False, unitriangular=True)
        return ts(U, y, upper=True)
    y = ts(U, b, upper=True, transpose=True)
    y = ts(L, y, upper=False, transpose=True, unitriangular=True)
    return oar.matmul(P, y)


def matrix_exp(x, name=None):
    """exp(x) = sum x^k / k! of square matrices [*, n, n]: x / 2^s with ||x / 2^s|| <= 1/2,
    a degree-18 Taylor polynomial, then s squarings."""
    import oar
    op = "matrix_exp"
    _matrix(x, op)
    n = x.shape[-1]
    if x.shape[-2] != n:
        raise ValueError(f"{op}: x must be square ([*, n, n]), got shape {list(x.shape)}")
    if x.size == 0:
        return x.clone()
    norm = float(x.abs().sum(-1).max())  # the largest inf-norm over the batch
    s = 0
    if math.isfinite(norm) and norm > 0.5:
        s = min(int(math.ceil(math.log2(norm / 0.5))), 1100)  # past 1100, exp overflows anyway
    a = x / float(2 ** s)
    eye = _ops.eye(n, n, x.dtype, x.place)
    term, out = eye.expand(x.shape), eye.expand(x.shape)
    for k in range(1, 19):
        term = oar.matmul(term, a) / float(k)
        out = out + term
    for _ in range(s):
        out = oar.matmul(out, out)
    return out


def householder_product(x, tau, name=None):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i = (0, ..., 0,
    1, x[i+1:, i]) from x [*, m, n] and tau [*, k], k <= n <= m."""
    op = "householder_product"
    _matrix(x, op)
    if not isinstance(tau, Tensor) or tau.dtype != x.dtype:
        raise TypeError(f"{op}: tau must be a Tensor of x's dtype {x.dtype.name}")
    *batch, m, n = x.shape
    k = tau.shape[-1] if tau.ndim else -1
    if m < n or list(tau.shape[:-1]) != batch or not 0 <= k <= n:
        raise ValueError(f"{op}: need x [*, m, n] with m >= n and tau [*, k] with k <= n, got "
                         f"{list(x.shape)} and {list(tau.shape)}")
    return _householder_q(x, tau, k)[..., :, :n]


def _householder_q(x, tau, k):
    """The whole m x m product H_1 ... H_k of householder_product's reflectors."""
    import oar
    *batch, m, _ = x.shape
    q = _ops.eye(m, m, x.dtype, x.place).expand(batch + [m, m])
    for i in range(k):  # k is a dim of tau
        v = oar.concat([_full_on(x.place, batch + [i], 0.0, x.dtype),
                        _full_on(x.place, batch + [1], 1.0, x.dtype),
                        x[..., i + 1:, i]], axis=-1).unsqueeze(-1)  # [*, m, 1]
        q = q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * oar.matmul(oar.matmul(q, v), v,
                                                                   transpose_y=True)
    return q


def ormqr(x, tau, y, left=True, transpose=False, name=None):
    """Q @ y (left) or y @ Q, with Q^T instead when transpose: Q = H_1 ... H_k the m x m
    product of the Householder reflectors stored in x [*, m, n] and tau [*, k] (as
    householder_product, which gives Q's first n columns). Differentiable in x, tau and y."""
    import oar
    op = "ormqr"
    _matrix(x, op)
    _matrix(y, op, "y")
    if not isinstance(tau, Tensor) or tau.dtype != x.dtype or y.dtype != x.dtype:
        raise TypeError(f"{op}: tau and y must be Tensors of x's dtype {x.dtype.name}")
    *batch, m, n = x.shape
    k = tau.shape[-1] if tau.ndim else -1
    if list(tau.shape[:-1]) != batch or not 0 <= k <= min(m, n):
        raise ValueError(f"{op}: need tau [*, k] with k <= min(m, n) for x [*, m, n], got "
                         f"{list(x.shape)} and {list(tau.shape)}")
    if list(y.shape[:-2]) != batch or (y.shape[-2] if left else y.shape[-1]) != m:
        side = "rows" if left else "columns"
        raise ValueError(f"{op}: y must have {m} {side} (x's rows) and x's batch dims, got "
                         f"y {list(y.shape)} for x {list(x.shape)} (left={left})")
    q = _householder_q(x, tau, k)
    return oar.matmul(q, y, transpose_x=transpose) if left else \
        oar.matmul(y, q, transpose_y=transpose)


# ---- randomized low-rank SVD / PCA (Halko, Martinsson, Tropp 2011): a random Gaussian
# sketch of x's range refined by `niter` power iterations, then an exact SVD of the small
# projected matrix. The Gaussian draws come from oar.randn ([n, q] per call, one call) in
# the order Paddle's documented algorithm makes them, so seeded results agree with it.
_MAX_NITER = 1000  # power iterations beyond a few dozen change nothing but the run time


def _lowrank_args(x, q, niter, op):
    _matrix(x, op)
    m, n = x.shape[-2:]
    if q is None:
        q = min(6, m, n)
    if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q <= min(m, n):
        raise ValueError(f"{op}: q must be an int in [0, min(m, n)] = [0, {min(m, n)}] for x "
                         f"of shape {list(x.shape)}, got {q!r}")
    if isinstance(niter, bool) or not isinstance(niter, int) or not 0 <= niter <= _MAX_NITER:
        raise ValueError(f"{op}: niter must be an int in [0, {_MAX_NITER}], got {niter!r}")
    return q


def _range_basis(a, q, niter, mean):
    """Orthonormal Q [*, m, q] whose span approximates the range of a - mean."""
    import oar

    def apply(t, mat, m_mat):  # (a - mean) @ mat without forming a - mean
        return oar.matmul(t, mat) if m_mat is None else oar.matmul(t, mat) - oar.matmul(m_mat, mat)
    from .linalg import qr, _mT
    a_t = _mT(a)
    mean_t = None if mean is None else _mT(mean)
    sketch = _randn_on(a.place, [a.shape[-1], q], a.dtype)
    basis = qr(apply(a, sketch, mean))[0]
    for _ in range(niter):
        basis = qr(apply(a_t, basis, mean_t))[0]
        basis = qr(apply(a, basis, mean))[0]
    return basis


def svd_lowrank(x, q=None, niter=2, M=None, name=None):  # noqa: N803  (Paddle's name)
    """(U [*, m, q], S [*, q], V [*, n, q]) with x - M ~ U diag(S) V^T: a randomized SVD
    keeping q (default min(6, m, n)) singular triplets; M (broadcast to x) is subtracted
    implicitly. Differentiable through the ops it is made of."""
    import oar
    from .linalg import _mT, svd
    op = "svd_lowrank"
    q = _lowrank_args(x, q, niter, op)
    m, n = x.shape[-2:]
    if M is not None:
        if not isinstance(M, Tensor) or M.dtype != x.dtype:
            raise TypeError(f"{op}: M must be a Tensor of x's dtype {x.dtype.name}, got "
                            f"{M.dtype.name if isinstance(M, Tensor) else type(M).__name__}")
        try:
            M = M.broadcast_to(list(x.shape))
        except ValueError:
            raise ValueError(f"{op}: M of shape {list(M.shape)} cannot be broadcast to x's "
                             f"shape {list(x.shape)}") from None
    x_t, m_t = _mT(x), (None if M is None else _mT(M))
    if m < n or n > q:  # sketch the range of x^T (the row space of x)
        basis = _range_basis(x_t, q, niter, m_t)
        b = oar.matmul(x, basis) if M is None else oar.matmul(x, basis) - oar.matmul(M, basis)
        u, s, vh = svd(b)
        return u, s, oar.matmul(basis, _mT(vh))
    basis = _range_basis(x, q, niter, M)
    b = oar.matmul(x_t, basis) if M is None else oar.matmul(x_t, basis) - oar.matmul(m_t, basis)
    u, s, vh = svd(_mT(b))
    return oar.matmul(basis, u), s, _mT(vh)


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """svd_lowrank of x with its column means (over dim -2) removed when center."""
    op = "pca_lowrank"
    q = _lowrank_args(x, q, niter, op)
    if not isinstance(center, bool):
        raise TypeError(f"{op}: center must be a bool, got {center!r}")
    if center:
        x = x - x.mean(axis=-2, keepdim=True)
    return svd_lowrank(x, q, niter=niter)
