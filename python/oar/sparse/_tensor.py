"""Oar's sparse tensors (Paddle's `paddle.sparse`): COO and CSR (Note [Sparse tensors] in
docs/notes/sparse.md).

A COO tensor of dense shape S holds `indices`, an int64 tensor [sparse_dim, nnz] of positions
in S's first sparse_dim dims, and `values`, a tensor [nnz, *S[sparse_dim:]] (the dense part of
each stored element). A CSR tensor is a matrix [M, N] or a batch of them [B, M, N]: `crows`
(int64, B * (M + 1) row offsets), `cols` (int64, nnz) and `values` (nnz). Index tensors are
plain data; `values` is an ordinary Oar tensor, so autograd flows through it: every sparse op
here computes its values with Oar's dense ops (gather/scatter/index_add) on those tensors.
Duplicated COO indices are allowed until `coalesce()` sorts the indices and sums duplicates,
as in Paddle. Index arithmetic (sorting, patterns of results) runs in NumPy on the indices.
"""
import numpy as np

import oar
from .._creation import _full_on

_INDEX_DTYPES = ("int32", "int64")


def _fail(op, msg, exc=ValueError):
    raise exc(f"{op}: {msg}")


def _dt(t):
    return t.dtype.name


def _as_index_array(op, arg, t):
    """An index tensor/list as an int64 NumPy array (checked to be integers)."""
    if isinstance(t, oar.Tensor):
        if _dt(t) not in _INDEX_DTYPES + ("int16", "int8", "uint8"):
            _fail(op, f"{arg} must be an integer tensor, got dtype {_dt(t)}", TypeError)
        return t.numpy().astype(np.int64)
    arr = np.asarray(t)
    if arr.size and arr.dtype.kind not in "iu":
        _fail(op, f"{arg} must hold integers, got dtype {arr.dtype}", TypeError)
    return arr.astype(np.int64)


def _index_tensor(arr, place):
    """arr as int64 indices on `place` (the values' place: a device tensor's indices are on the device)."""
    return oar.to_tensor(np.ascontiguousarray(arr, dtype=np.int64), place=place)




def _check_shape(op, shape):
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        _fail(op, f"shape must be a list of ints, got {shape!r}", TypeError)
    if any(d < 0 for d in dims):
        _fail(op, f"shape must not hold negative dims, got {dims}")
    return dims


def _linear(indices, dims):
    """Row-major linear positions of the index columns of `indices` in a grid of `dims`."""
    if indices.shape[0] == 0 or indices.shape[1] == 0:
        return np.zeros(indices.shape[1], dtype=np.int64)
    try:
        return np.ravel_multi_index(tuple(indices), tuple(dims))
    except ValueError:
        raise ValueError(f"sparse: a grid of dims {list(dims)} has more than 2**63 positions, so "
                         "its indices cannot be sorted or matched; use fewer or smaller sparse "
                         "dims") from None


class _SparseTensor:
    """What COO and CSR tensors share: shape, dtype, autograd on values, printing."""
    _values: "oar.Tensor"
    _shape: list

    @property
    def shape(self):
        return oar.Size(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def place(self):
        return self._values.place

    @property
    def stop_gradient(self):
        return self._values.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, flag):
        self._values.stop_gradient = flag

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    def values(self):
        return self._values

    def nnz(self):
        return int(self._values.shape[0])

    def is_sparse(self):
        return True

    def is_dense(self):
        return False

    def numpy(self):
        return self.to_dense().numpy()

    def numel(self):
        return self.size

    def astype(self, dtype):
        from .unary import cast
        return cast(self, value_dtype=dtype)

    def backward(self, grad_tensor=None, retain_graph=False):
        if grad_tensor is not None and isinstance(grad_tensor, _SparseTensor):
            grad_tensor = grad_tensor.values()
        self._values.backward(grad_tensor, retain_graph=retain_graph)

    def detach(self):
        return self._with_values(self._values.detach())

    def clone(self):
        return self._with_values(self._values.clone())

    def __len__(self):
        return self._shape[0] if self._shape else 0

    def __bool__(self):
        _fail("Tensor.__bool__", "the truth value of a sparse tensor is ambiguous; use "
              "to_dense() first", TypeError)

    def _parts(self):
        raise NotImplementedError

    def __repr__(self):
        from oar._tensor import _ItemFormatter, _format_array, _PrintOptions
        pad = " " * 7
        lines = []
        for name, t in self._parts():
            arr = (t.astype("float32") if _dt(t) == "bfloat16" else t).numpy()
            summary = arr.ndim > 0 and arr.size > _PrintOptions.threshold
            kind = "c" if arr.dtype.kind == "c" else arr.dtype.kind == "f"
            fmt = _ItemFormatter(arr, kind)
            lines.append(f"{pad}{name}=" + _format_array(arr, summary, len(pad) + len(name) + 1, fmt))
        return (f"Tensor(shape={list(self._shape)}, dtype=paddle.{_dt(self._values)}, "
                f"place={self.place}, stop_gradient={self.stop_gradient},\n" + ",\n".join(lines) + ")")

    __str__ = __repr__

    # arithmetic: Paddle's sparse operators
    def __add__(self, y):
        from .binary import add
        return add(self, y)

    def __sub__(self, y):
        from .binary import subtract
        return subtract(self, y)

    def __mul__(self, y):
        from .binary import multiply
        return multiply(self, y)

    def __truediv__(self, y):
        from .binary import divide
        return divide(self, y)

    def __matmul__(self, y):
        from .binary import matmul
        return matmul(self, y)

    def __neg__(self):
        from .unary import neg
        return neg(self)

    __radd__ = __add__
    __rmul__ = __mul__


class SparseCooTensor(_SparseTensor):
    """A COO tensor: see the module's docstring."""

    def __init__(self, indices, values, shape, coalesced=False):
        self._indices = indices
        self._values = values
        self._shape = list(shape)
        self._coalesced = coalesced

    def _with_values(self, values):
        return SparseCooTensor(self._indices, values, self._shape, self._coalesced)

    def _parts(self):
        return [("indices", self._indices), ("values", self._values)]

    def is_sparse_coo(self):
        return True

    def is_sparse_csr(self):
        return False

    def indices(self):
        return self._indices

    def sparse_dim(self):
        return int(self._indices.shape[0])

    def dense_dim(self):
        return len(self._shape) - self.sparse_dim()

    def is_coalesced(self):
        return self._coalesced

    def coalesce(self):
        from .unary import coalesce
        return coalesce(self)

    @property
    def grad(self):
        g = self._values.grad
        return None if g is None else SparseCooTensor(self._indices, g, self._shape, self._coalesced)

    def to_dense(self):
        if self._values.dtype == oar.bool:  # scatter-add has no bool kernel: count, then test
            return self._with_values(self._values.astype("int32")).to_dense() != 0
        out = _full_on(self._values.place, self._shape, 0.0, self._values.dtype)
        if self.sparse_dim() == 0:  # every element of the dense part is stored
            return out + self._values.sum(axis=0)
        return oar.scatter_nd_add(out, self._indices.t(), self._values)

    def to_sparse_coo(self, sparse_dim=None):
        if sparse_dim is None or sparse_dim == self.sparse_dim():
            return self
        return dense_to_coo(self.to_dense(), sparse_dim)

    def to_sparse_csr(self):
        if self.dense_dim() != 0 or self.ndim not in (2, 3):
            _fail("to_sparse_csr", f"a CSR tensor is 2-D or 3-D with no dense dims; this COO "
                  f"tensor has shape {self._shape} and sparse_dim {self.sparse_dim()}")
        return coo_to_csr(self)


class SparseCsrTensor(_SparseTensor):
    """A CSR matrix [M, N] or batch [B, M, N]: see the module's docstring."""

    def __init__(self, crows, cols, values, shape):
        self._crows = crows
        self._cols = cols
        self._values = values
        self._shape = list(shape)

    def _with_values(self, values):
        return SparseCsrTensor(self._crows, self._cols, values, self._shape)

    def _parts(self):
        return [("crows", self._crows), ("cols", self._cols), ("values", self._values)]

    def is_sparse_coo(self):
        return False

    def is_sparse_csr(self):
        return True

    def crows(self):
        return self._crows

    def cols(self):
        return self._cols

    @property
    def grad(self):
        g = self._values.grad
        return None if g is None else SparseCsrTensor(self._crows, self._cols, g, self._shape)

    def to_sparse_coo(self, sparse_dim=None):
        coo = csr_to_coo(self)
        if sparse_dim is None or sparse_dim == coo.sparse_dim():
            return coo
        return dense_to_coo(coo.to_dense(), sparse_dim)

    def to_sparse_csr(self):
        return self

    def to_dense(self):
        return csr_to_coo(self).to_dense()


def is_sparse(x):
    return isinstance(x, _SparseTensor)


def dense_to_coo(x, sparse_dim=None):
    """Tensor.to_sparse_coo(sparse_dim): the positions over x's first sparse_dim dims whose
    dense slice has a nonzero; values are gathered from x (differentiable)."""
    op = "to_sparse_coo"
    if not isinstance(x, oar.Tensor):
        _fail(op, f"x must be a Tensor, got {type(x).__name__}", TypeError)
    nd = x.ndim
    if sparse_dim is None:
        sparse_dim = nd
    if isinstance(sparse_dim, bool) or not isinstance(sparse_dim, (int, np.integer)) \
            or not 0 < sparse_dim <= nd:
        _fail(op, f"sparse_dim must be an int in [1, {nd}] for a {nd}-D tensor, got {sparse_dim!r}")
    sparse_dim = int(sparse_dim)
    arr = x.numpy()
    mask = arr != 0
    if sparse_dim < nd:
        rest = int(np.prod(arr.shape[sparse_dim:], dtype=np.int64))
        mask = mask.reshape(arr.shape[:sparse_dim] + (rest,)).any(axis=-1)
    idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sparse_dim, -1)
    indices = _index_tensor(idx, x.place)
    values = oar.gather_nd(x, indices.t()) if idx.shape[1] else \
        _full_on(x.place, [0] + list(x.shape[sparse_dim:]), 0.0, x.dtype)
    return SparseCooTensor(indices, values, list(x.shape), coalesced=True)


def dense_to_csr(x):
    op = "to_sparse_csr"
    if not isinstance(x, oar.Tensor):
        _fail(op, f"x must be a Tensor, got {type(x).__name__}", TypeError)
    if x.ndim not in (2, 3):
        _fail(op, f"x must be 2-D or 3-D, got shape {list(x.shape)}")
    return coo_to_csr(dense_to_coo(x, x.ndim))


def coo_to_csr(coo):
    """A coalesced COO matrix (or batch) with no dense dims -> CSR."""
    from .unary import coalesce
    coo = coalesce(coo)
    idx = coo._indices.numpy()
    shape = coo._shape
    if len(shape) == 2:
        batches, m = 1, shape[0]
        flat_rows = idx[0]
    else:
        batches, m = shape[0], shape[1]
        flat_rows = idx[0] * m + idx[1]
    counts = np.bincount(flat_rows, minlength=batches * m).reshape(batches, m)
    crows = np.concatenate([np.zeros((batches, 1), np.int64), np.cumsum(counts, axis=1)], axis=1)
    return SparseCsrTensor(_index_tensor(crows.reshape(-1), coo._values.place), _index_tensor(idx[-1], coo._values.place),
                           coo._values, shape)


def csr_rows(csr):
    """The (batch, row) of each stored element of a CSR tensor, as NumPy arrays."""
    shape = csr._shape
    m = shape[-2]
    batches = shape[0] if len(shape) == 3 else 1
    crows = csr._crows.numpy().reshape(batches, m + 1)
    counts = np.diff(crows, axis=1).reshape(-1)
    flat = np.repeat(np.arange(batches * m, dtype=np.int64), counts)
    return flat // m, flat % m


def csr_to_coo(csr):
    b, r = csr_rows(csr)
    cols = csr._cols.numpy()
    idx = np.stack([r, cols]) if len(csr._shape) == 2 else np.stack([b, r, cols])
    return SparseCooTensor(_index_tensor(idx, csr._values.place), csr._values, csr._shape, coalesced=True)


def from_coo_like(x, coo):
    """coo in x's format (CSR back from COO when x is CSR)."""
    return coo_to_csr(coo) if isinstance(x, SparseCsrTensor) else coo
