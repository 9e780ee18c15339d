"""paddle.sparse's unary functions: element-wise maps of the stored values (each keeps zero at
zero, so the pattern is kept), casts, coalesce, sum, reshape, transpose and slice."""
import numpy as np

import oar
from .._creation import _full_on
from oar._dtype import convert_dtype

from ._tensor import SparseCooTensor, SparseCsrTensor, _SparseTensor, _fail, _index_tensor, \
    _linear, coo_to_csr, csr_to_coo, from_coo_like

__all__ = [
    "sin", "tan", "asin", "atan", "sinh", "tanh", "asinh", "atanh", "sqrt", "square", "log1p",
    "abs", "pow", "pca_lowrank", "cast", "neg", "deg2rad", "rad2deg", "expm1", "transpose",
    "sum", "coalesce", "reshape", "isnan", "slice",
]


def check_sparse(op, x, arg="x"):
    if not isinstance(x, _SparseTensor):
        _fail(op, f"{arg} must be a sparse tensor (SparseCooTensor or SparseCsrTensor), got "
              f"{type(x).__name__}; convert a dense tensor with to_sparse_coo()/to_sparse_csr()",
              TypeError)
    return x


def map_values(op, x, fn):
    """x with fn applied to its values (the pattern is kept)."""
    check_sparse(op, x)
    return x._with_values(fn(x.values()))


def _unary(name, doc):
    def fn(x, name=None):
        return map_values(_n, x, getattr(oar, _n))
    _n = name
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc} of the stored values of a sparse tensor (its pattern is kept)."
    return fn


sin = _unary("sin", "sin")
tan = _unary("tan", "tan")
asin = _unary("asin", "arcsin")
atan = _unary("atan", "arctan")
sinh = _unary("sinh", "sinh")
tanh = _unary("tanh", "tanh")
asinh = _unary("asinh", "arcsinh")
atanh = _unary("atanh", "arctanh")
sqrt = _unary("sqrt", "The square root")
square = _unary("square", "The square")
log1p = _unary("log1p", "log(1 + x)")
abs = _unary("abs", "The absolute value")  # noqa: A001 (Paddle's name)
neg = _unary("neg", "The negation")
deg2rad = _unary("deg2rad", "Degrees to radians")
rad2deg = _unary("rad2deg", "Radians to degrees")
expm1 = _unary("expm1", "exp(x) - 1")
isnan = _unary("isnan", "isnan")


def pow(x, factor, name=None):  # noqa: A001 (Paddle's name)
    """x ** factor on the stored values."""
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        _fail("pow", f"factor must be a Python int or float, got {type(factor).__name__}", TypeError)
    return map_values("pow", x, lambda v: oar.pow(v, factor))


def cast(x, index_dtype=None, value_dtype=None, name=None):
    """x with its index tensors cast to index_dtype and its values to value_dtype."""
    check_sparse("cast", x)
    if index_dtype is not None and convert_dtype(index_dtype).name not in (
            "int8", "uint8", "int16", "int32", "int64"):
        _fail("cast", f"index_dtype must be an integer dtype, got {index_dtype}", TypeError)
    values = x.values() if value_dtype is None else x.values().astype(value_dtype)
    ix = (lambda t: t) if index_dtype is None else (lambda t: t.astype(index_dtype))
    if isinstance(x, SparseCooTensor):
        return SparseCooTensor(ix(x.indices()), values, x._shape, x._coalesced)
    return SparseCsrTensor(ix(x.crows()), ix(x.cols()), values, x._shape)


def coalesce(x, name=None):
    """x's indices sorted (row-major) with duplicated positions' values summed."""
    check_sparse("coalesce", x)
    if isinstance(x, SparseCsrTensor) or x._coalesced:
        return x
    idx = x.indices().numpy().astype(np.int64)
    lin = _linear(idx, x._shape[:idx.shape[0]])
    uniq, first, inverse = np.unique(lin, return_index=True, return_inverse=True)
    values = x.values()
    if uniq.size == lin.size and np.all(np.diff(lin) > 0):
        return SparseCooTensor(x.indices(), values, x._shape, coalesced=True)
    summed = oar.index_add(_full_on(values.place, [uniq.size] + list(values.shape[1:]), 0.0, values.dtype),
                           _index_tensor(inverse.reshape(-1), values.place), 0, values)
    return SparseCooTensor(_index_tensor(idx[:, first], values.place), summed, x._shape, coalesced=True)


def _axes(op, axis, ndim):
    items = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            _fail(op, f"axis must be ints in [{-ndim}, {ndim}) for a {ndim}-D tensor, got {axis!r}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        _fail(op, f"axis must not repeat a dim, got {axis!r}")
    return sorted(out, reverse=True)


def _sum_axis(x, a, keepdim):
    """A COO tensor summed over one axis."""
    sd, shape = x.sparse_dim(), list(x._shape)
    idx, values = x.indices().numpy(), x.values()
    if a >= sd:  # a dense dim: reduce the values
        values = values.sum(axis=a - sd + 1, keepdim=keepdim)
        shape = shape[:a] + ([1] if keepdim else []) + shape[a + 1:]
        return SparseCooTensor(x.indices(), values, shape, x._coalesced)
    if keepdim:
        idx = idx.copy()
        idx[a] = 0
        shape[a] = 1
    elif sd == 1:  # the only sparse dim: Paddle keeps it with size 1
        idx = np.zeros_like(idx)
        shape[a] = 1
    else:
        idx = np.delete(idx, a, axis=0)
        del shape[a]
    return coalesce(SparseCooTensor(_index_tensor(idx, values.place), values, shape))


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """The sum over axis (None: all) as a sparse tensor; summing away every sparse dim keeps
    one sparse dim of size 1 (Paddle's layout)."""
    check_sparse("sum", x)
    if dtype is None and x.dtype.name in ("bool", "int32"):
        dtype = "int64"  # Paddle's accumulation type for these
    if dtype is not None:
        x = cast(x, value_dtype=dtype)
    coo = x if isinstance(x, SparseCooTensor) else csr_to_coo(x)
    if axis is None:
        total = coo.values().sum()
        if keepdim:
            sd = coo.sparse_dim()
            out = SparseCooTensor(_index_tensor(np.zeros((sd, 1)), total.place),
                                  total.reshape([1] * (coo.ndim - sd + 1)), [1] * coo.ndim, True)
        else:
            out = SparseCooTensor(_index_tensor(np.zeros((1, 1)), total.place), total.reshape([1]), [1], True)
    else:
        out = coo
        keep = keepdim or isinstance(x, SparseCsrTensor)  # a CSR result stays 2-D/3-D
        for a in _axes("sum", axis, coo.ndim):
            out = _sum_axis(out, a, keep)
    if isinstance(x, SparseCsrTensor) and out.ndim in (2, 3) and out.dense_dim() == 0:
        return coo_to_csr(out)
    return out


def _new_shape(op, shape, old):
    dims = [int(d) for d in shape]
    out = [old[i] if d == 0 and i < len(old) else d for i, d in enumerate(dims)]
    total = int(np.prod(old, dtype=np.int64))
    if out.count(-1) > 1 or any(d < -1 for d in out):
        _fail(op, f"shape may hold one -1 and no other negative dim, got {list(shape)}")
    if -1 in out:
        rest = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if rest == 0 or total % rest:
            _fail(op, f"cannot reshape a tensor of shape {old} into {list(shape)}")
        out[out.index(-1)] = total // rest
    if int(np.prod(out, dtype=np.int64)) != total:
        _fail(op, f"cannot reshape a tensor of shape {old} ({total} elements) into {list(shape)}")
    return out


def reshape(x, shape, name=None):
    """x with a new shape (0 copies x's dim, one -1 is inferred); the dense dims of a COO
    tensor stay as they are, its sparse dims are re-indexed."""
    check_sparse("reshape", x)
    coo = x if isinstance(x, SparseCooTensor) else csr_to_coo(x)
    sd, old = coo.sparse_dim(), coo._shape
    new = _new_shape("reshape", shape, old)
    dense = old[sd:]
    if dense and new[len(new) - len(dense):] != dense:
        _fail("reshape", f"a COO tensor's dense dims {dense} must stay the trailing dims, got "
              f"shape {new}")
    new_sd = len(new) - len(dense)
    lin = _linear(coo.indices().numpy(), old[:sd])
    idx = np.stack(np.unravel_index(lin, new[:new_sd])) if lin.size else \
        np.zeros((new_sd, 0), np.int64)
    out = SparseCooTensor(_index_tensor(idx.reshape(new_sd, -1), coo.values().place), coo.values(), new, coo._coalesced)
    if isinstance(x, SparseCsrTensor):
        if len(new) not in (2, 3):
            _fail("reshape", f"a CSR tensor reshapes to 2-D or 3-D only, got shape {new}")
        return coo_to_csr(out)
    return out


def transpose(x, perm, name=None):
    """x with its dims permuted by perm."""
    check_sparse("transpose", x)
    nd = x.ndim
    perm = [int(p) for p in perm]
    if sorted(p % nd for p in perm) != list(range(nd)) or len(perm) != nd:
        _fail("transpose", f"perm must be a permutation of the {nd} dims, got {perm}")
    perm = [p % nd for p in perm]
    coo = x if isinstance(x, SparseCooTensor) else csr_to_coo(x)
    sd = coo.sparse_dim()
    shape = [coo._shape[p] for p in perm]
    if sorted(perm[:sd]) != list(range(sd)):  # moves dims across the sparse/dense split
        dense = oar.transpose(coo.to_dense(), perm)
        from ._tensor import dense_to_coo
        out = dense_to_coo(dense, sd)
    else:
        idx = coo.indices().numpy()[perm[:sd]]
        dperm = [0] + [p - sd + 1 for p in perm[sd:]]
        values = coo.values() if dperm == sorted(dperm) else oar.transpose(coo.values(), dperm)
        out = coalesce(SparseCooTensor(_index_tensor(idx, values.place), values, shape))
    return coo_to_csr(out) if isinstance(x, SparseCsrTensor) else out


def slice(x, axes, starts, ends, name=None):  # noqa: A001 (Paddle's name)
    """x[starts:ends] along axes (negative bounds count from the end, bounds are clamped)."""
    check_sparse("slice", x)
    axes, starts, ends = ([int(v) for v in (a.tolist() if isinstance(a, oar.Tensor) else a)]
                          for a in (axes, starts, ends))
    if not len(axes) == len(starts) == len(ends):
        _fail("slice", f"axes, starts and ends must have one entry each, got {len(axes)}, "
              f"{len(starts)}, {len(ends)}")
    coo = x if isinstance(x, SparseCooTensor) else csr_to_coo(x)
    nd, sd = coo.ndim, coo.sparse_dim()
    shape = list(coo._shape)
    idx, values = coo.indices().numpy(), coo.values()
    keep = np.ones(idx.shape[1], dtype=bool)
    offsets = np.zeros(sd, np.int64)
    for a, s, e in zip(axes, starts, ends):
        if not -nd <= a < nd:
            _fail("slice", f"axes must lie in [{-nd}, {nd}), got {a}")
        a %= nd
        n = shape[a]
        s = min(max(s + n if s < 0 else s, 0), n)
        e = min(max(e + n if e < 0 else e, 0), n)
        e = max(e, s)
        shape[a] = e - s
        if a < sd:
            keep &= (idx[a] >= s) & (idx[a] < e)
            offsets[a] = s
        else:
            values = oar.slice(values, [a - sd + 1], [s], [e])
    sel = np.nonzero(keep)[0]
    idx = idx[:, sel] - offsets[:, None]
    values = oar.index_select(values, _index_tensor(sel, values.place), axis=0)
    return from_coo_like(x, SparseCooTensor(_index_tensor(idx, values.place), values, shape, coo._coalesced))


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """Principal components of a sparse matrix [M, N]: U [M, q], S [q], V [N, q] with
    x - mean ~ U diag(S) V^T. Oar computes them exactly (a thin SVD of the centred matrix);
    niter, the randomized method's iteration count, is accepted and checked only."""
    check_sparse("pca_lowrank", x)
    if x.ndim != 2:
        _fail("pca_lowrank", f"x must be a 2-D sparse matrix, got shape {x._shape}")
    m, n = x._shape
    q = min(6, m, n) if q is None else q
    if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q <= min(m, n):
        _fail("pca_lowrank", f"q must be an int in [0, {min(m, n)}], got {q!r}")
    if isinstance(niter, bool) or not isinstance(niter, int) or niter < 0:
        _fail("pca_lowrank", f"niter must be a non-negative int, got {niter!r}")
    a = x.to_dense()
    if center:
        a = a - a.mean(axis=0, keepdim=True)
    u, s, vh = oar.linalg.svd(a, full_matrices=False)
    return u[:, :q], s[:q], vh.t()[:, :q]
