"""paddle.sparse's binary functions: element-wise add/subtract/multiply/divide, matmul, mv,
masked_matmul, mask_as and is_same_shape."""
import numpy as np

import oar

from .._creation import _full_on
from ._tensor import SparseCooTensor, SparseCsrTensor, _SparseTensor, _fail, _index_tensor, \
    _linear, csr_rows, csr_to_coo, dense_to_coo, from_coo_like
from .unary import check_sparse, coalesce

__all__ = ["add", "subtract", "multiply", "divide", "matmul", "masked_matmul", "mv",
           "is_same_shape", "mask_as"]


def _coo(x):
    return x if isinstance(x, SparseCooTensor) else csr_to_coo(x)


def _same_layout(op, x, y):
    """x and y as coalesced COO tensors with the same shape and sparse_dim."""
    if list(x.shape) != list(y.shape):
        _fail(op, f"x and y must have the same shape, got {list(x.shape)} and {list(y.shape)}")
    if type(x) is not type(y):
        _fail(op, f"x and y must have the same format, got {type(x).__name__} and "
              f"{type(y).__name__}", TypeError)
    if x.dtype != y.dtype:
        _fail(op, f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}",
              TypeError)
    cx, cy = coalesce(_coo(x)), coalesce(_coo(y))
    if cx.sparse_dim() != cy.sparse_dim():
        cy = coalesce(dense_to_coo(cy.to_dense(), cx.sparse_dim()))
    return cx, cy


def _all_positions(like, dense):
    """dense as a sparse tensor in like's format storing every element."""
    sd = like.sparse_dim() if isinstance(like, SparseCooTensor) else like.ndim
    grid = list(dense.shape[:sd])
    idx = np.indices(grid).reshape(sd, -1).astype(np.int64)
    values = oar.gather_nd(dense, _index_tensor(idx.T, dense.place)) if idx.shape[1] else \
        _full_on(dense.place, [0] + list(dense.shape[sd:]), 0.0, dense.dtype)
    return from_coo_like(like, SparseCooTensor(_index_tensor(idx, dense.place), values, list(dense.shape), True))


def _union(op, x, y, sign):
    cx, cy = _same_layout(op, x, y)
    vy = cy.values() if sign > 0 else -cy.values()
    idx = oar.concat([cx.indices(), cy.indices()], axis=1)
    both = SparseCooTensor(idx, oar.concat([cx.values(), vy], axis=0), cx._shape)
    return from_coo_like(x, coalesce(both))


def add(x, y, name=None):
    """x + y: sparse + sparse (same shape and format) stores the union of their patterns;
    sparse + dense is dense."""
    check_sparse("add", x)
    if isinstance(y, oar.Tensor):
        return x.to_dense() + y
    check_sparse("add", y, "y")
    return _union("add", x, y, 1)


def subtract(x, y, name=None):
    """x - y with add's patterns."""
    check_sparse("subtract", x)
    if isinstance(y, oar.Tensor):
        return x.to_dense() - y
    check_sparse("subtract", y, "y")
    return _union("subtract", x, y, -1)


def multiply(x, y, name=None):
    """x * y: by a scalar, the values scale; sparse * sparse stores the intersection of the
    patterns; sparse * dense (same shape) keeps x's pattern."""
    check_sparse("multiply", x)
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return x._with_values(x.values() * y)
    if isinstance(y, oar.Tensor):
        if list(y.shape) != list(x.shape):
            _fail("multiply", f"a dense y must have x's shape {list(x.shape)}, got {list(y.shape)}")
        return x._with_values(x.values() * mask_as(y, x).values())
    check_sparse("multiply", y, "y")
    cx, cy = _same_layout("multiply", x, y)
    sd = cx.sparse_dim()
    lx = _linear(cx.indices().numpy(), cx._shape[:sd])
    ly = _linear(cy.indices().numpy(), cy._shape[:sd])
    _, ix, iy = np.intersect1d(lx, ly, assume_unique=True, return_indices=True)
    vx = oar.index_select(cx.values(), _index_tensor(ix, cx.values().place), axis=0)
    vy = oar.index_select(cy.values(), _index_tensor(iy, cy.values().place), axis=0)
    idx = _index_tensor(cx.indices().numpy()[:, ix].reshape(sd, -1), cx.values().place)
    return from_coo_like(x, SparseCooTensor(idx, vx * vy, cx._shape, True))


def divide(x, y, name=None):
    """x / y: by a scalar, the values divide. Otherwise 0 / 0 is NaN and x / 0 is inf, so the
    quotient is not sparse: the result stores every element (as Paddle's does)."""
    check_sparse("divide", x)
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return x._with_values(x.values() / y)
    if isinstance(y, _SparseTensor):
        _same_layout("divide", x, y)
        y = y.to_dense()
    elif not isinstance(y, oar.Tensor):
        _fail("divide", f"y must be a sparse tensor, a Tensor or a number, got {type(y).__name__}",
              TypeError)
    return _all_positions(x, x.to_dense() / y)


def _matrix_parts(op, x):
    """(batch, row, col, values, B, M, K) of a sparse matrix or batch of matrices."""
    if x.ndim not in (2, 3) or (isinstance(x, SparseCooTensor) and x.dense_dim() != 0):
        _fail(op, f"x must be a sparse matrix [M, K] or batch [B, M, K] with no dense dims, "
              f"got shape {list(x.shape)}")
    if isinstance(x, SparseCsrTensor):
        b, r = csr_rows(x)
        c = x.cols().numpy()
    else:
        idx = x.indices().numpy()
        b, r, c = (np.zeros_like(idx[0]), idx[0], idx[1]) if x.ndim == 2 else idx
    shape = x._shape
    batches = shape[0] if x.ndim == 3 else 1
    return b, r, c, x.values(), batches, shape[-2], shape[-1]


def matmul(x, y, name=None):
    """x @ y for a sparse x: with a dense y the product is dense; with a sparse y it is sparse
    in x's format."""
    check_sparse("matmul", x)
    if isinstance(y, _SparseTensor):
        return from_coo_like(x, dense_to_coo(matmul(x, y.to_dense())))
    if not isinstance(y, oar.Tensor):
        _fail("matmul", f"y must be a Tensor or a sparse tensor, got {type(y).__name__}", TypeError)
    b, r, c, v, batches, m, k = _matrix_parts("matmul", x)
    if y.ndim != x.ndim or list(y.shape[:-1]) != list(x.shape[:-2]) + [k]:
        _fail("matmul", f"y must have shape {list(x.shape[:-2]) + [k, 'N']} for x of shape "
              f"{list(x.shape)}, got {list(y.shape)}")
    if x.dtype != y.dtype:
        _fail("matmul", f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}",
              TypeError)
    n = y.shape[-1]
    rows = oar.index_select(y.reshape([batches * k, n]), _index_tensor(b * k + c, y.place), axis=0)
    out = oar.index_add(_full_on(y.place, [batches * m, n], 0.0, y.dtype), _index_tensor(b * m + r, y.place), 0,
                        rows * v.unsqueeze(-1))
    return out.reshape(list(x.shape[:-1]) + [n])


def mv(x, vec, name=None):
    """A sparse matrix [M, N] times a dense vector [N]: a dense vector [M]."""
    check_sparse("mv", x)
    if not isinstance(vec, oar.Tensor) or vec.ndim != 1:
        _fail("mv", f"vec must be a 1-D Tensor, got {getattr(vec, 'shape', type(vec).__name__)}",
              TypeError)
    if x.ndim != 2:
        _fail("mv", f"x must be a 2-D sparse matrix, got shape {list(x.shape)}")
    return matmul(x, vec.unsqueeze(-1)).squeeze(-1)


def masked_matmul(x, y, mask, name=None):
    """(x @ y) at the positions mask stores only, as a sparse tensor in mask's format."""
    check_sparse("masked_matmul", mask, "mask")
    for arg, t in (("x", x), ("y", y)):
        if not isinstance(t, oar.Tensor):
            _fail("masked_matmul", f"{arg} must be a dense Tensor, got {type(t).__name__}", TypeError)
    b, r, c, _, batches, m, n = _matrix_parts("masked_matmul", mask)
    if x.ndim != mask.ndim or y.ndim != mask.ndim or list(x.shape[:-1]) != list(mask.shape[:-1]) \
            or y.shape[-1] != n or x.shape[-1] != y.shape[-2] or list(x.shape[:-2]) != list(y.shape[:-2]):
        _fail("masked_matmul", f"x {list(x.shape)} @ y {list(y.shape)} must have mask's shape "
              f"{list(mask.shape)}")
    k = x.shape[-1]
    xr = oar.index_select(x.reshape([batches * m, k]), _index_tensor(b * m + r, x.place), axis=0)
    yt = oar.transpose(y, list(range(y.ndim - 2)) + [y.ndim - 1, y.ndim - 2])
    yc = oar.index_select(yt.reshape([batches * n, k]), _index_tensor(b * n + c, x.place), axis=0)
    return mask._with_values((xr * yc).sum(axis=-1))


def is_same_shape(x, y):
    """Whether x and y (dense or sparse) have the same shape."""
    for arg, t in (("x", x), ("y", y)):
        if not isinstance(t, (oar.Tensor, _SparseTensor)):
            _fail("is_same_shape", f"{arg} must be a Tensor or a sparse tensor, got "
                  f"{type(t).__name__}", TypeError)
    return list(x.shape) == list(y.shape)


def mask_as(x, mask, name=None):
    """The elements of dense x at the positions mask stores, as a sparse tensor in mask's
    format (differentiable in x)."""
    check_sparse("mask_as", mask, "mask")
    if not isinstance(x, oar.Tensor):
        _fail("mask_as", f"x must be a dense Tensor, got {type(x).__name__}", TypeError)
    if list(x.shape) != list(mask.shape):
        _fail("mask_as", f"x must have mask's shape {list(mask.shape)}, got {list(x.shape)}")
    coo = _coo(mask)
    idx = coo.indices()
    values = oar.gather_nd(x, idx.t()) if coo.nnz() else \
        _full_on(x.place, [0] + list(x.shape[coo.sparse_dim():]), 0.0, x.dtype)
    if isinstance(mask, SparseCsrTensor):
        return SparseCsrTensor(mask.crows(), mask.cols(), values, mask._shape)
    return SparseCooTensor(mask.indices(), values, mask._shape, mask._coalesced)

