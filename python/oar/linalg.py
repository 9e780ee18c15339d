"""oar.linalg: Paddle's linear-algebra namespace.

Decompositions and solvers are ops (paddle_core/ops/linalg.yaml, LAPACK kernels,
backward formulas in paddle_core/api/composite_linalg.h); everything else here is a
composition of differentiable ops: norms, pinv, lstsq, matrix_power, cond, cross,
multi_dot and einsum (a contraction planner lowering to transpose/reshape/matmul).
"""
import math as _math

import numpy as _np

from . import _C
from ._C import Tensor as _Tensor

_ops = _C.ops
matmul = _ops.matmul

__all__ = [
    "matmul", "bmm", "mv", "einsum", "inv", "det", "slogdet", "solve", "triangular_solve",
    "cholesky", "cholesky_solve", "qr", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals",
    "lstsq", "pinv",
    "matrix_power", "matrix_rank", "norm", "vector_norm", "matrix_norm", "cond", "cross",
    "multi_dot",
]


def _check_matrix(x, op, arg="x", square=False):
    if not isinstance(x, _Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{op}: {arg} must have rank >= 2 ([*, m, n]), got shape {list(x.shape)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: {arg} must be a stack of square matrices, got shape {list(x.shape)}")


def _float(x, op, arg="x"):
    """float32/float64 input (integers become the default float dtype, as Paddle's kernels
    reject them: we raise instead of converting silently)."""
    if x.dtype.name not in ("float32", "float64"):
        raise TypeError(f"{op}: {arg} must be float32 or float64, got {x.dtype.name}")
    return x


def _broadcast_batch(x, y, op):
    """x [*bx, a, b] and y [*by, c, d] expanded to a common batch shape."""
    bx, by = list(x.shape[:-2]), list(y.shape[:-2])
    try:
        batch = list(_np.broadcast_shapes(tuple(bx), tuple(by)))
    except ValueError:
        raise ValueError(f"{op}: batch dims of x {list(x.shape)} and y {list(y.shape)} cannot be "
                         "broadcast together") from None
    if bx != batch:
        x = _ops.expand(x, batch + list(x.shape[-2:]))
    if by != batch:
        y = _ops.expand(y, batch + list(y.shape[-2:]))
    return x, y


def _mT(x):
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _ops.transpose(x, perm)


# ---- products
def bmm(x, y, name=None):
    """Batched matrix product of [b, m, k] and [b, k, n]."""
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError(f"bmm: x and y must be 3-D, got shapes {list(x.shape)} and {list(y.shape)}")
    if x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise ValueError(f"bmm: x of shape {list(x.shape)} and y of shape {list(y.shape)} do not match "
                         "([b, m, k] and [b, k, n])")
    return _ops.matmul(x, y)


def mv(x, vec, name=None):
    """Matrix [m, n] times vector [n]."""
    if x.ndim != 2 or vec.ndim != 1:
        raise ValueError(f"mv: x must be 2-D and vec 1-D, got shapes {list(x.shape)} and {list(vec.shape)}")
    if x.shape[1] != vec.shape[0]:
        raise ValueError(f"mv: x of shape {list(x.shape)} and vec of shape {list(vec.shape)} do not match")
    return _ops.matmul(x, vec)


def multi_dot(x, name=None):
    """Product of a chain of matrices (first/last may be 1-D) in the cheapest order."""
    x = list(x)
    if len(x) < 2:
        raise ValueError(f"multi_dot: expected at least 2 tensors, got {len(x)}")
    first_vec, last_vec = x[0].ndim == 1, x[-1].ndim == 1
    if first_vec:
        x[0] = _ops.unsqueeze(x[0], [0])
    if last_vec:
        x[-1] = _ops.unsqueeze(x[-1], [1])
    for i, t in enumerate(x):
        if t.ndim != 2:
            raise ValueError(f"multi_dot: tensor {i} must be 2-D (1-D allowed first and last), "
                             f"got shape {list(t.shape)}")
    for i in range(len(x) - 1):
        if x[i].shape[1] != x[i + 1].shape[0]:
            raise ValueError(f"multi_dot: tensor {i} of shape {list(x[i].shape)} and tensor {i + 1} of "
                             f"shape {list(x[i + 1].shape)} do not match")
    dims = [x[0].shape[0]] + [t.shape[1] for t in x]
    n = len(x)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = _math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return x[i]
        k = split[i][j]
        return _ops.matmul(chain(i, k), chain(k + 1, j))

    out = chain(0, n - 1)
    if first_vec:
        out = _ops.squeeze(out, [0])
    if last_vec:
        out = _ops.squeeze(out, [-1])
    return out


# ---- einsum: parse, reduce each operand, contract pairs through matmul.
def _parse_einsum(equation, operands):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: equation '{equation}' has {len(terms)} operands but "
                         f"{len(operands)} tensors were given")
    ell_rank = 0
    for t, x in zip(terms, operands):
        if "..." in t:
            ell_rank = max(ell_rank, x.ndim - (len(t) - 3))
    ell = [chr(0x100 + i) for i in range(ell_rank)]  # labels no equation can use
    parsed = []
    for i, (t, x) in enumerate(zip(terms, operands)):
        if any(not (c.isalpha() or c == ".") for c in t):
            raise ValueError(f"einsum: invalid character in '{t}' (equation '{equation}')")
        if "..." in t:
            pre, post = t.split("...")
            k = x.ndim - len(pre) - len(post)
            if k < 0:
                raise ValueError(f"einsum: operand {i} of shape {list(x.shape)} has fewer dims than "
                                 f"'{t}' names")
            labels = list(pre) + ell[ell_rank - k:] + list(post)
        else:
            labels = list(t)
        if len(labels) != x.ndim:
            raise ValueError(f"einsum: operand {i} has {x.ndim} dims but its subscripts '{t}' "
                             f"name {len(labels)}")
        parsed.append(labels)
    if rhs is None:
        counts = {}
        for labels in parsed:
            for c in labels:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    else:
        if "..." in rhs:
            pre, post = rhs.split("...")
            out = list(pre) + ell + list(post)
        else:
            out = list(rhs)
        known = {c for labels in parsed for c in labels}
        for c in out:
            if c not in known:
                raise ValueError(f"einsum: output subscript '{c}' of '{equation}' appears in no "
                                 "input")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscripts of '{equation}' repeat a label")
    return parsed, out


def _take_diagonals(x, labels):
    """Merges repeated labels of one operand into one dim (its diagonal)."""
    from ._manip import _diagonal_view
    while True:
        seen = {}
        dup = None
        for i, c in enumerate(labels):
            if c in seen:
                dup = (seen[c], i)
                break
            seen[c] = i
        if dup is None:
            return x, labels
        a, b = dup
        if x.shape[a] != x.shape[b]:
            raise ValueError(f"einsum: label '{labels[a]}' has sizes {x.shape[a]} and {x.shape[b]}")
        x = _diagonal_view(_ops.contiguous(x), 0, a, b)
        labels = [c for i, c in enumerate(labels) if i not in (a, b)] + [labels[a]]


def _sum_labels(x, labels, drop):
    axes = [i for i, c in enumerate(labels) if c in drop]
    if not axes:
        return x, labels
    return _ops.sum(x, axes, None, False), [c for c in labels if c not in drop]


def _mergeable(t, group_sizes):
    """Whether each run of `group_sizes` consecutive dims of t folds into one dim without a
    copy (the reshape to [batch, rows, cols] is then a view; matmul takes any 2-D strides)."""
    shape, strides = t.shape, t.strides
    start = 0
    for n in group_sizes:
        dims = [i for i in range(start, start + n) if shape[i] != 1]
        for i, j in zip(dims, dims[1:]):
            if strides[i] != strides[j] * shape[j]:
                return False
        start += n
    return True


def _contract(a, la, b, lb, keep):
    """a (labels la) times b (labels lb), summing shared labels not in `keep`."""
    sizes = {}
    for t, ls in ((a, la), (b, lb)):
        for c, s in zip(ls, t.shape):
            if c in sizes and sizes[c] != s and 1 not in (sizes[c], s):
                raise ValueError(f"einsum: label '{c}' has sizes {sizes[c]} and {s}")
            if sizes.get(c, 1) == 1:  # size-1 dims broadcast
                sizes[c] = s
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def arrange(t, ls, groups):
        order = [c for g in groups for c in g]
        want = [sizes[c] for c in order]
        if order != ls:
            t = _ops.transpose(t, [ls.index(c) for c in order])
            if not _mergeable(t, [len(g) for g in groups]):
                t = _ops.contiguous(t)  # one vectorized copy rather than reshape's fallback
        if list(t.shape) != want:
            t = _ops.expand(t, want)
        return t

    a = arrange(a, la, [batch, left, contr])
    b = arrange(b, lb, [batch, contr, right])
    prod = lambda cs: int(_np.prod([sizes[c] for c in cs], dtype=_np.int64))  # noqa: E731
    nb, m, k, n = prod(batch), prod(left), prod(contr), prod(right)
    labels = batch + left + right
    if 0 in (nb, m, k, n):  # reshape reads 0 as "keep this dim": build the result directly
        zero = (_ops.sum(a, [], None, False) + _ops.sum(b, [], None, False)) * 0.0
        return _ops.full([sizes[c] for c in labels], 0.0, a.dtype, a.place) + zero, labels
    out = _ops.matmul(_ops.reshape(a, [nb, m, k]), _ops.reshape(b, [nb, k, n]))
    return _ops.reshape(out, [sizes[c] for c in labels]), labels


def einsum(equation, *operands):
    """Einstein summation: 'ij,jk->ik', '...ij,...jk', 'ii->i', 'bij->'..."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    parsed, out = _parse_einsum(equation, operands)
    ts = []
    for x, labels in zip(operands, parsed):
        x, labels = _take_diagonals(x, labels)
        ts.append((x, labels))
    # Sum labels that appear in one operand only and not in the output.
    for i, (x, labels) in enumerate(ts):
        elsewhere = set(out)
        for j, (_, lj) in enumerate(ts):
            if j != i:
                elsewhere |= set(lj)
        ts[i] = _sum_labels(x, labels, {c for c in labels if c not in elsewhere})
    x, labels = ts[0]
    for j in range(1, len(ts)):
        keep = set(out)
        for _, lk in ts[j + 1:]:
            keep |= set(lk)
        x, labels = _contract(x, labels, ts[j][0], ts[j][1], keep)
        x, labels = _sum_labels(x, labels, {c for c in labels if c not in keep})
    x, labels = _sum_labels(x, labels, {c for c in labels if c not in out})
    if labels != out:
        x = _ops.transpose(x, [labels.index(c) for c in out])
    return x


# ---- decompositions and solvers
def inv(x, name=None):
    """Inverse of each square matrix; singular matrices raise ValueError."""
    _check_matrix(x, "inv", square=True)
    return _ops.inv(_float(x, "inv"))


def det(x, name=None):
    _check_matrix(x, "det", square=True)
    return _ops._det(_float(x, "det"))


def slogdet(x, name=None):
    """[2, *]: sign and log|det| of each matrix (Paddle stacks them)."""
    _check_matrix(x, "slogdet", square=True)
    sign, logabs = _ops._slogdet(_float(x, "slogdet"))
    return _ops.stack([sign, logabs], 0)


def solve(x, y, left=True, name=None):
    """X with x @ X = y (left) or X @ x = y; y may be a vector [*, n]."""
    _check_matrix(x, "solve", square=True)
    _float(x, "solve")
    if y.dtype != x.dtype:
        raise TypeError(f"solve: y must have the dtype of x ({x.dtype.name}), got {y.dtype.name}")
    vec = y.ndim == 1 or (y.ndim == x.ndim - 1 and list(y.shape) == list(x.shape[:-1]))
    if vec:
        y = _ops.unsqueeze(y, [-1])
    if not left:
        if vec:
            raise ValueError("solve: left=False needs a matrix y, got a vector")
        return _mT(solve(_mT(x), _mT(y)))
    if y.shape[-2] != x.shape[-1]:
        raise ValueError(f"solve: x of shape {list(x.shape)} and y of shape {list(y.shape)} do not match "
                         "(expected x [*, n, n] and y [*, n, k] or [*, n])")
    xb, yb = _broadcast_batch(x, y, "solve")
    out = _ops._solve(xb, yb)
    return _ops.squeeze(out, [-1]) if vec else out


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """X with op(x) @ X = y for a triangular x (op: transpose when `transpose`)."""
    _check_matrix(x, "triangular_solve", square=True)
    _check_matrix(y, "triangular_solve", "y")
    _float(x, "triangular_solve")
    if y.shape[-2] != x.shape[-1]:
        raise ValueError(f"triangular_solve: x of shape {list(x.shape)} and y of shape {list(y.shape)} do not "
                         "match (expected x [*, n, n] and y [*, n, k])")
    xb, yb = _broadcast_batch(x, y, "triangular_solve")
    return _ops._triangular_solve(xb, yb, upper, transpose, unitriangular)


def cholesky(x, upper=False, name=None):
    """L with x = L L^T (or U with x = U^T U); raises ValueError when x is not positive definite."""
    _check_matrix(x, "cholesky", square=True)
    return _ops._cholesky(_float(x, "cholesky"), upper)


def cholesky_solve(x, y, upper=False, name=None):
    """X with A X = x, where y is A's Cholesky factor (lower, or upper when `upper`)."""
    _check_matrix(y, "cholesky_solve", "y", square=True)
    _check_matrix(x, "cholesky_solve", "x")
    if upper:
        z = triangular_solve(y, x, upper=True, transpose=True)
        return triangular_solve(y, z, upper=True, transpose=False)
    z = triangular_solve(y, x, upper=False, transpose=False)
    return triangular_solve(y, z, upper=False, transpose=True)


def qr(x, mode="reduced", name=None):
    """(Q, R) with x = Q R; mode 'reduced', 'complete', or 'r' (R only)."""
    _check_matrix(x, "qr")
    _float(x, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got '{mode}'")
    q, r = _ops._qr(x, "reduced" if mode == "r" else mode)
    return r if mode == "r" else (q, r)


def svd(x, full_matrices=False, name=None):
    """(U, S, VH) with x = U diag(S) VH, singular values descending."""
    _check_matrix(x, "svd")
    return _ops._svd(_float(x, "svd"), full_matrices)


def svdvals(x, name=None):
    _check_matrix(x, "svdvals")
    return _ops._svd(_float(x, "svdvals"), False)[1]


def _float_or_complex(x, op, arg="x"):
    if x.dtype.name not in ("float32", "float64", "complex64", "complex128"):
        raise TypeError(f"{op}: {arg} must be float32 or float64 (or complex64/complex128), got "
                        f"{x.dtype.name}")
    return x


def _uplo(uplo, op):
    if uplo not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo


def eigh(x, UPLO="L", name=None):  # noqa: N803  (Paddle's name)
    """(eigenvalues ascending (real), eigenvectors as columns) of real symmetric or complex
    Hermitian matrices, read from the UPLO triangle."""
    _check_matrix(x, "eigh", square=True)
    _float_or_complex(x, "eigh")
    _uplo(UPLO, "eigh")
    if x.dtype.name.startswith("complex"):
        from ._linalg_eig import complex_eigh
        return complex_eigh(x, UPLO)
    return _ops._eigh(x, UPLO)


def eigvalsh(x, UPLO="L", name=None):  # noqa: N803
    """The (real, ascending) eigenvalues of real symmetric or complex Hermitian matrices."""
    _check_matrix(x, "eigvalsh", square=True)
    _float_or_complex(x, "eigvalsh")
    _uplo(UPLO, "eigvalsh")
    if x.dtype.name.startswith("complex"):
        from ._linalg_eig import complex_eigh
        return complex_eigh(x, UPLO)[0]
    return _ops._eigh(x, UPLO)[0]


def eig(x, name=None):
    """(eigenvalues [*, n], eigenvectors [*, n, n] as unit-norm columns) of general square
    matrices, both complex (complex64 for float32/complex64 x, else complex128), as LAPACK's
    geev gives them (oar._linalg_eig). Differentiable where the eigenvalues are distinct."""
    from ._linalg_eig import eig as _eig
    return _eig(x)


def eigvals(x, name=None):
    """The complex eigenvalues [*, n] of general square matrices."""
    from ._linalg_eig import eigvals as _eigvals
    return _eigvals(x)


def _default_rcond(x):
    eps = float(_np.finfo(_np.float32 if x.dtype.name == "float32" else _np.float64).eps)
    return eps * max(x.shape[-2], x.shape[-1])


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """Moore-Penrose pseudo-inverse through the SVD (singular values <= rcond * max cut)."""
    _check_matrix(x, "pinv")
    _float(x, "pinv")
    u, s, vh = _ops._svd(x, False)
    if s.shape[-1] == 0:
        return _ops.full(list(x.shape[:-2]) + [x.shape[-1], x.shape[-2]], 0.0, x.dtype, x.place)
    smax = _ops.max(s, [-1], True)
    keep = _ops.greater_than(s, smax * float(rcond))
    safe = _ops.where(keep, s, _ops.full_like(s, 1.0, s.dtype))
    s_inv = _ops.where(keep, 1.0 / safe, _ops.full_like(s, 0.0, s.dtype))
    return _ops.matmul(_mT(vh) * _ops.unsqueeze(s_inv, [-2]), u, False, True)


def lstsq(x, y, rcond=None, driver=None, name=None):
    """Least squares: (solution, residuals, rank, singular_values), as Paddle's gelsd driver
    (singular values are returned for 'gelsd'/'gelss', residuals when m > n at full rank)."""
    _check_matrix(x, "lstsq")
    _check_matrix(y, "lstsq", "y")
    _float(x, "lstsq")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"lstsq: driver must be one of 'gels', 'gelsy', 'gelsd', 'gelss', "
                         f"got '{driver}'")
    if y.shape[-2] != x.shape[-2]:
        raise ValueError(f"lstsq: x of shape {list(x.shape)} and y of shape {list(y.shape)} must have the same "
                         "number of rows")
    xb, yb = _broadcast_batch(x, y, "lstsq")
    if rcond is None:
        rcond = _default_rcond(x)
    u, s, vh = _ops._svd(xb, False)
    m, n = x.shape[-2], x.shape[-1]
    if s.shape[-1]:
        smax = _ops.max(s, [-1], True)
        keep = _ops.greater_than(s, smax * float(rcond))
        safe = _ops.where(keep, s, _ops.full_like(s, 1.0, s.dtype))
        s_inv = _ops.where(keep, 1.0 / safe, _ops.full_like(s, 0.0, s.dtype))
        rank = _ops.sum(_ops.cast(keep, _C.DataType.int64), [-1], None, False)
        sol = _ops.matmul(_mT(vh) * _ops.unsqueeze(s_inv, [-2]), _ops.matmul(u, yb, True, False))
    else:
        rank = _ops.full(list(s.shape[:-1]), 0, _C.DataType.int64, x.place)
        sol = _ops.full(list(yb.shape[:-2]) + [n, yb.shape[-1]], 0.0, x.dtype, x.place)
    full_rank = bool(_np.all(rank.numpy() == n)) if s.shape[-1] else False
    if m > n and full_rank:
        r = _ops.matmul(xb, sol) - yb
        residuals = _ops.sum(r * r, [-2], None, False)
    else:
        residuals = _ops.full([0], 0.0, x.dtype, x.place)
    sv = s if driver in ("gelsd", "gelss") else _ops.full([0], 0.0, x.dtype, x.place)
    return sol, residuals, _ops.cast(rank, _C.DataType.int32), sv  # rank: int32, as Paddle


def matrix_power(x, n, name=None):
    """x^n for an int n (negative: powers of the inverse; 0: identity)."""
    _check_matrix(x, "matrix_power", square=True)
    if not isinstance(n, (int, _np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        k = x.shape[-1]
        return _ops.expand(_ops.eye(k, k, x.dtype, x.place), list(x.shape))
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else _ops.matmul(result, base)
        n >>= 1
        if n:
            base = _ops.matmul(base, base)
    return result


def matrix_rank(x, tol=None, hermitian=False, atol=None, rtol=None, name=None):
    """Number of singular values above the tolerance (int64, batched)."""
    _check_matrix(x, "matrix_rank")
    _float(x, "matrix_rank")
    if hermitian:
        s = _ops.abs(_ops._eigh(x, "L")[0])
    else:
        s = _ops._svd(x, False)[1]
    if s.shape[-1] == 0:
        return _ops.full(list(s.shape[:-1]), 0, _C.DataType.int64, x.place)
    smax = _ops.max(s, [-1], True)
    if tol is not None:
        thr = tol if isinstance(tol, _Tensor) else _ops.full([], float(tol), x.dtype, x.place)
        if isinstance(thr, _Tensor) and thr.ndim:
            thr = _ops.unsqueeze(thr, [-1])
    elif atol is not None or rtol is not None:
        a = 0.0 if atol is None else atol
        r = (_default_rcond(x) if atol is None else 0.0) if rtol is None else rtol
        a = a if isinstance(a, _Tensor) else _ops.full([], float(a), x.dtype, x.place)
        thr = _ops.maximum(a, smax * float(r))
    else:
        thr = smax * _default_rcond(x)
    return _ops.sum(_ops.cast(_ops.greater_than(s, thr), _C.DataType.int64), [-1], None, False)


# ---- norms
def _axis_list(axis, ndim, op):
    if axis is None:
        return None
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    r = max(ndim, 1)
    for a in axes:
        if not -r <= a < r:
            raise _C.OutOfRangeError(f"{op}: axis {a} is out of range for a tensor of rank {ndim}")
    return [a % r for a in axes]


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    """(sum |x|^p)^(1/p) over axis (all dims when None); p may be inf, -inf or 0."""
    axes = _axis_list(axis, x.ndim, "vector_norm")
    if axes is None:
        axes, keepdim_all = list(range(x.ndim)), keepdim
    else:
        keepdim_all = keepdim
    if not x.dtype.is_floating_point:
        raise TypeError(f"vector_norm: x must be a floating-point tensor, got {x.dtype.name}")
    if isinstance(p, str):
        raise ValueError(f"vector_norm: p must be a number, got '{p}'")
    p = float(p)
    if p == _math.inf:
        return _ops.max(_ops.abs(x), axes, keepdim_all)
    if p == -_math.inf:
        return _ops.min(_ops.abs(x), axes, keepdim_all)
    if p == 0:
        return _ops.sum(_ops.cast(_ops.not_equal(x, _ops.full([], 0.0, x.dtype, x.place)), x.dtype), axes,
                        None, keepdim_all)
    if p == 1:
        return _ops.sum(_ops.abs(x), axes, None, keepdim_all)
    if p == 2:  # one pass, summed in double
        return _ops.p_norm(x, 2.0, axes, keepdim_all)
    return _ops.pow(_ops.sum(_ops.pow(_ops.abs(x), p), axes, None, keepdim_all), 1.0 / p)


def matrix_norm(x, p="fro", axis=(-2, -1), keepdim=False, name=None):
    """'fro', 'nuc', inf, -inf, 1, -1, 2 or -2 norm of the matrices in dims `axis`."""
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: x must have rank >= 2, got shape {list(x.shape)}")
    axes = _axis_list(axis, x.ndim, "matrix_norm")
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"matrix_norm: axis must hold 2 different axes, got {axis}")
    a0, a1 = axes
    if p == "fro":
        return _ops.p_norm(x, 2.0, [a0, a1], keepdim)
    if p in ("nuc", 2, -2, 2.0, -2.0):
        rest = [i for i in range(x.ndim) if i not in (a0, a1)]
        m = _ops.transpose(x, rest + [a0, a1])
        s = svdvals(m)
        if p == "nuc":
            out = _ops.sum(s, [-1], None, False)
        else:
            out = _ops.max(s, [-1], False) if p > 0 else _ops.min(s, [-1], False)
        if keepdim:
            for a in sorted((a0, a1)):
                out = _ops.unsqueeze(out, [a])
        return out
    if p in (1, -1, _math.inf, -_math.inf):
        inner, outer = (a0, a1) if p in (1, -1) else (a1, a0)  # 1: max column sum
        sums = _ops.sum(_ops.abs(x), [inner], None, True)
        red = _ops.max if p > 0 else _ops.min
        out = red(sums, [outer], True)
        return out if keepdim else _ops.squeeze(out, sorted([a0, a1]))
    raise ValueError(f"matrix_norm: p must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {p}")


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Vector norm over one axis (or the flattened tensor), matrix norm over two axes."""
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        return matrix_norm(x, "fro" if p is None else p, axis, keepdim)
    if isinstance(axis, (list, tuple)) and len(axis) not in (1, 2):
        raise ValueError(f"norm: axis must be an int or a list of 1 or 2 axes, got {axis}")
    if p is None or p == "fro":
        return vector_norm(x, 2.0, axis, keepdim)
    if isinstance(p, str):
        raise ValueError(f"norm: p='{p}' needs a 2-D axis, got axis={axis}")
    return vector_norm(x, p, axis, keepdim)


def cond(x, p=None, name=None):
    """Condition number: s_max / s_min (p None, 2, -2) or norm(x, p) * norm(inv(x), p)."""
    _check_matrix(x, "cond")
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = _ops.max(s, [-1], False), _ops.min(s, [-1], False)
        return big / small if p != -2 else small / big
    if p not in ("fro", "nuc", 1, -1, _math.inf, -_math.inf):
        raise ValueError(f"cond: p must be None, 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {p}")
    _check_matrix(x, "cond", square=True)
    return matrix_norm(x, p) * matrix_norm(inv(x), p)


def cross(x, y, axis=9, name=None):
    """Cross product of 3-vectors along axis (default: the first dim of size 3)."""
    if list(x.shape) != list(y.shape):
        try:
            shape = list(_np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
        except ValueError:
            raise ValueError(f"cross: shapes {list(x.shape)} and {list(y.shape)} cannot be broadcast") from None
        x, y = _ops.expand(x, shape), _ops.expand(y, shape)
    if axis == 9:
        dims = [i for i, s in enumerate(x.shape) if s == 3]
        if not dims:
            raise ValueError(f"cross: no dim of size 3 in shape {list(x.shape)}")
        a = dims[0]
    else:
        a = _axis_list(axis, x.ndim, "cross")[0]
        if x.shape[a] != 3:
            raise ValueError(f"cross: axis {axis} must have size 3, got shape {list(x.shape)}")
    xs = [_ops._select(x, a, i) for i in range(3)]
    ys = [_ops._select(y, a, i) for i in range(3)]
    return _ops.stack([xs[1] * ys[2] - xs[2] * ys[1], xs[2] * ys[0] - xs[0] * ys[2],
                       xs[0] * ys[1] - xs[1] * ys[0]], a)


# ---- Tensor methods (Paddle 3.3's: det, svd, eigh, triangular_solve and matrix_rank are
# paddle.linalg functions only)
for _n, _f in [("bmm", bmm), ("mv", mv), ("inverse", inv), ("cholesky", cholesky),
               ("cross", cross), ("norm", norm), ("slogdet", slogdet),
               ("matrix_power", matrix_power), ("pinv", pinv), ("qr", qr), ("solve", solve),
               ("cholesky_solve", cholesky_solve), ("lstsq", lstsq), ("cond", cond),
               ("eigvalsh", eigvalsh), ("eig", eig), ("eigvals", eigvals)]:
    setattr(_Tensor, _n, _f)


# ---- compositions: vecdot, cov, corrcoef, cholesky_inverse
def vecdot(x, y, axis=-1, name=None):
    """sum(x * y) along axis, broadcast (oar.vecdot)."""
    from ._math_composites import vecdot as _vecdot
    return _vecdot(x, y, axis)


def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """The covariance matrix of the variables in x's rows (columns if not rowvar), with
    optional integer frequency and float observation weights, as numpy.cov."""
    if not isinstance(x, _Tensor) or x.ndim > 2:
        raise ValueError(f"cov: x must be a 1-D or 2-D Tensor, got "
                         f"{list(x.shape) if isinstance(x, _Tensor) else type(x).__name__}")
    m = x.reshape([1, -1]) if x.ndim < 2 else (x if rowvar else x.T)
    if not m.dtype.is_floating_point:
        m = m.astype(_C.get_default_dtype())
    n = m.shape[1]
    w = None
    for arg, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.ndim != 1 or wt.shape[0] != n:
            raise ValueError(f"cov: {arg} must be 1-D with {n} elements, got shape {list(wt.shape)}")
        if bool((wt < 0).any()):
            raise ValueError(f"cov: {arg} must be non-negative")
        wt = wt.astype(m.dtype)
        w = wt if w is None else w * wt
    if w is None:
        w = _ops.full([n], 1.0, m.dtype, m.place)
    w_sum = w.sum()
    avg = (m * w).sum(axis=1, keepdim=True) / w_sum
    if not ddof:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - 1
    else:
        fact = w_sum - (w * aweights.astype(m.dtype)).sum() / w_sum
    d = m - avg
    c = _ops.matmul(d * w, d, False, True) / fact
    return c.reshape([]) if c.shape == [1, 1] else c  # one variable: a 0-D variance, as numpy and Paddle


def corrcoef(x, rowvar=True, name=None):
    """Pearson correlation coefficients of the variables in x's rows (columns if not
    rowvar), clipped to [-1, 1]."""
    c = cov(x, rowvar)
    if c.ndim == 0:
        return c / c
    d = _ops.sqrt(_ops.diagonal(c, 0, 0, 1))
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    return _ops.clip(c, -1.0, 1.0)


def cholesky_inverse(x, upper=False, name=None):
    """The inverse of A = L L^T (or U^T U when upper) from its Cholesky factor x."""
    _check_matrix(x, "cholesky_inverse", square=True)
    a = _ops.matmul(x, x, True, False) if upper else _ops.matmul(x, x, False, True)
    return inv(a)


__all__ += ["vecdot", "cov", "corrcoef", "cholesky_inverse"]

# LU family, matrix_exp, householder_product, svd/pca_lowrank: compositions loaded on first use (oar._lazy)
_MORE = ("lu", "lu_unpack", "lu_solve", "matrix_exp", "householder_product", "ormqr",
         "svd_lowrank", "pca_lowrank")
__all__ += list(_MORE)


from . import _lazy  # noqa: E402
_lazy.install(globals(), "oar", {"._linalg_more": " ".join(_MORE)})
