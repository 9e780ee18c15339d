"""paddle.sparse.sparse_coo_tensor / sparse_csr_tensor: build sparse tensors from parts."""
import numpy as np

import oar

from ._tensor import SparseCooTensor, SparseCsrTensor, _as_index_array, _check_shape, _fail, \
    _index_tensor

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor"]


def _values_tensor(op, values, dtype, stop_gradient):
    """values as a tensor of dtype; the user's tensor stays in the autograd graph when
    stop_gradient is False (gradients of the sparse tensor's values reach it)."""
    if isinstance(values, oar.Tensor):
        v = values if dtype is None else values.astype(dtype)
    else:
        try:
            v = oar.to_tensor(values, dtype=dtype)
        except (TypeError, ValueError) as e:
            _fail(op, f"values must be a Tensor or a nested list of numbers: {e}", TypeError)
    if stop_gradient:
        return v.detach()
    if v.stop_gradient:
        v = v.detach()
        v.stop_gradient = False
    return v


def sparse_coo_tensor(indices, values, shape=None, dtype=None, place=None, stop_gradient=True):
    """A COO tensor from indices [sparse_dim, nnz] and values [nnz, *dense dims]; shape
    defaults to the smallest that holds the indices (max + 1) followed by values' dense dims."""
    op = "sparse_coo_tensor"
    idx = _as_index_array(op, "indices", indices)
    if idx.ndim == 1:
        idx = idx.reshape(1, -1)
    if idx.ndim != 2:
        _fail(op, f"indices must be 2-D [sparse_dim, nnz], got shape {list(idx.shape)}")
    v = _values_tensor(op, values, dtype, stop_gradient)
    if v.ndim == 0:
        _fail(op, "values must have at least 1 dim [nnz, ...], got a 0-D tensor")
    sparse_dim, nnz = idx.shape
    if v.shape[0] != nnz:
        _fail(op, f"values' first dim ({v.shape[0]}) must equal the number of index columns "
              f"({nnz}); indices have shape {list(idx.shape)}, values {list(v.shape)}")
    if nnz and idx.min() < 0:
        _fail(op, f"indices must be non-negative, got a minimum of {int(idx.min())}")
    needed = (idx.max(axis=1) + 1).tolist() if nnz else [0] * sparse_dim
    dense = list(v.shape[1:])
    if shape is None:
        dims = needed + dense
    else:
        dims = _check_shape(op, shape)
        if len(dims) != sparse_dim + len(dense):
            _fail(op, f"shape {dims} must have sparse_dim + dense dims = {sparse_dim} + "
                  f"{len(dense)} dims (indices {list(idx.shape)}, values {list(v.shape)})")
        if dims[sparse_dim:] != dense:
            _fail(op, f"shape {dims}'s dense dims must equal values' {dense}")
        small = [d for d, (have, need) in enumerate(zip(dims, needed)) if have < need]
        if small:
            d = small[0]
            _fail(op, f"shape[{d}] = {dims[d]} is too small for index {needed[d] - 1} in "
                  f"indices row {d}")
    return SparseCooTensor(_index_tensor(idx, v.place), v, dims)


def sparse_csr_tensor(crows, cols, values, shape, dtype=None, place=None, stop_gradient=True):
    """A CSR matrix [M, N] or batch [B, M, N]: crows (B * (M + 1) row offsets, each batch's
    starting at 0), cols and values (one per stored element)."""
    op = "sparse_csr_tensor"
    dims = _check_shape(op, shape)
    if len(dims) not in (2, 3):
        _fail(op, f"shape must be 2-D [M, N] or 3-D [B, M, N], got {dims}")
    cr = _as_index_array(op, "crows", crows).reshape(-1)
    cl = _as_index_array(op, "cols", cols).reshape(-1)
    v = _values_tensor(op, values, dtype, stop_gradient)
    if v.ndim != 1:
        _fail(op, f"values must be 1-D, got shape {list(v.shape)}")
    batches = dims[0] if len(dims) == 3 else 1
    m, n = dims[-2], dims[-1]
    if cr.size != batches * (m + 1):
        _fail(op, f"crows must have B * (M + 1) = {batches * (m + 1)} entries for shape {dims}, "
              f"got {cr.size}")
    if cl.size != v.shape[0]:
        _fail(op, f"cols ({cl.size}) and values ({v.shape[0]}) must have one entry per "
              "stored element")
    per = cr.reshape(batches, m + 1)
    if per.size and (np.any(per[:, 0] != 0) or np.any(np.diff(per, axis=1) < 0)):
        _fail(op, f"each batch's crows must start at 0 and not decrease, got {cr.tolist()[:16]}")
    if int(per[:, -1].sum()) != cl.size:
        _fail(op, f"the crows' last entries must add up to the number of stored elements "
              f"({cl.size}), got {int(per[:, -1].sum())}")
    if cl.size and (cl.min() < 0 or cl.max() >= n):
        _fail(op, f"cols must lie in [0, {n}) for shape {dims}, got [{int(cl.min())}, "
              f"{int(cl.max())}]")
    return SparseCsrTensor(_index_tensor(cr, v.place), _index_tensor(cl, v.place), v, dims)
