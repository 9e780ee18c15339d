"""Tensor.__getitem__ / __setitem__ with Paddle's (NumPy's) semantics, and the Python
shims of manipulation ops whose Paddle signature one generated binding cannot express:
split (int or list), nonzero(as_tuple), where(condition).

Getitem. Basic indices (ints, slices, None, Ellipsis) give views that share x's memory:
one strided_slice_view for all slices, one select per int, one unsqueeze for all Nones.
Advanced indices (int/bool tensors, lists, arrays; ints count as advanced next to them)
copy: a single one is a gather along its axis (masked_select for a full-shape mask);
several are moved to the front and read with one index_get, whose result dims go
where NumPy puts them (in place when the advanced indices are adjacent, else first).

Setitem writes into x (Paddle semantics). Without autograd a basic index is a plain
copy into the view; with autograd, or while to_static traces, the write is
slice_scatter_ / index_put_, in-place ops that move x's autograd history (and refuse
leaves that require grad) and that the tracer records.
"""
import operator
import sys

import numpy as np

from . import _C, _trace_state
from ._C import DataType, Tensor
from ._tensor import _filler

_ops = _C.ops
_select = _ops._select
_slice = _ops.strided_slice_view
_unsqueeze = _ops.unsqueeze
_to_tensor = _C.to_tensor
_grad_enabled = _C.is_grad_enabled
_MAX = (1 << 63) - 1
_MIN = -(1 << 63)
_INT_DTYPES = (DataType.int64, DataType.int32, DataType.int16, DataType.int8, DataType.uint8)

# Kinds of parsed index entries.
_NONE, _SLICE, _INT, _ADV, _BOOL, _ELLIPSIS, _PYBOOL = range(7)


# ---------------------------------------------------------------- parsing

def _entry(item, x):
    """(kind, payload) of one index item of x (a list or array becomes a tensor on x's place)."""
    if item is None:
        return _NONE, None
    if item is Ellipsis:
        return _ELLIPSIS, None
    if isinstance(item, slice):
        return _SLICE, item
    if isinstance(item, (bool, np.bool_)):
        return _PYBOOL, bool(item)
    if isinstance(item, (int, np.integer)):
        return _INT, int(item)
    if isinstance(item, Tensor):
        t = item
    elif isinstance(item, (list, tuple, np.ndarray)):
        arr = np.asarray(item)
        if arr.dtype != np.bool_ and not np.issubdtype(arr.dtype, np.integer):
            if arr.size:
                raise TypeError(f"getitem: index arrays must be int or bool, got {arr.dtype}")
            arr = arr.astype(np.int64)
        t = _to_tensor(arr, DataType.bool if arr.dtype == np.bool_ else DataType.int64, x.place)
    else:
        raise TypeError(f"getitem: unsupported index type {type(item).__name__} (use ints, "
                        "slices, None, Ellipsis, lists or int/bool tensors)")
    dt = t.dtype
    if dt == DataType.bool:
        if t.ndim == 0:
            return _PYBOOL, bool(t.item())
        return _BOOL, t
    if dt not in _INT_DTYPES:
        raise TypeError(f"getitem: tensors used as indices must be int or bool, got {dt.name}")
    if dt not in (DataType.int64, DataType.int32):
        t = _ops.cast(t, DataType.int64)
    return _ADV, t


def _parse(x, idx):
    """Index entries with Ellipsis expanded, and whether any is advanced."""
    items = idx if type(idx) is tuple else (idx,)
    entries = [_entry(i, x) for i in items]
    used, ell, adv = 0, -1, False
    for k, (kind, v) in enumerate(entries):
        if kind in (_SLICE, _INT, _ADV):
            used += 1
        elif kind == _BOOL:
            used += v.ndim
        elif kind == _ELLIPSIS:
            if ell >= 0:
                raise IndexError("getitem: an index can only have a single ellipsis ('...')")
            ell = k
        adv = adv or kind in (_ADV, _BOOL)
    ndim = x.ndim
    if used > ndim:
        raise IndexError(f"getitem: too many indices for a tensor of dimension {ndim} "
                         f"({used} given)")
    if ell >= 0:
        entries[ell:ell + 1] = [(_SLICE, slice(None))] * (ndim - used)
    return entries, adv


def _bounds(s):
    """(start, stop, step) of a slice for strided_slice_view (None -> open end)."""
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise ValueError("getitem: slice step cannot be zero")
    if s.start is None:
        start = 0 if step > 0 else _MAX
    else:
        start = operator.index(s.start)
    if s.stop is None:
        stop = _MAX if step > 0 else _MIN
    else:
        stop = operator.index(s.stop)
    return start, stop, step


def _is_full(s):
    return s.start is None and s.stop is None and (s.step is None or s.step == 1)


# ---------------------------------------------------------------- getitem

def _basic(x, entries):
    """View of x for entries of kinds NONE/SLICE/INT/PYBOOL."""
    axes, starts, ends, steps, ints, nones, empty = [], [], [], [], [], [], []
    dim = pos = 0
    for kind, v in entries:
        if kind == _SLICE:
            if not _is_full(v):
                a, b, c = _bounds(v)
                axes.append(dim)
                starts.append(a)
                ends.append(b)
                steps.append(c)
            dim += 1
            pos += 1
        elif kind == _INT:
            ints.append((dim, v))
            dim += 1
        else:  # None / True / False add an axis
            nones.append(pos)
            if kind == _PYBOOL and not v:
                empty.append(pos)
            pos += 1
    out = x
    if axes or not (ints or nones):
        out = _slice(out, axes, starts, ends, steps)
    for d, i in reversed(ints):
        out = _select(out, d, i)
    if nones:
        out = _unsqueeze(out, nones)
        if empty:
            out = _slice(out, empty, [0] * len(empty), [0] * len(empty), [])
    return out


def _advanced(x, entries):
    if any(k == _PYBOOL for k, _ in entries):
        raise IndexError("getitem: a Python bool index cannot be combined with tensor indices")
    # None -> unsqueeze first, so every entry below consumes dims of x.
    nones, pos = [], 0
    for k, v in entries:
        if k == _NONE:
            nones.append(pos)
        pos += v.ndim if k == _BOOL else 1
    if nones:
        x = _unsqueeze(x, nones)
        entries = [(_SLICE, slice(None)) if k == _NONE else (k, v) for k, v in entries]
    # Slices -> one view; ints and tensors -> advanced groups (dim, ndim, tensor).
    axes, starts, ends, steps, groups = [], [], [], [], []
    dim = 0
    for k, v in entries:
        if k == _SLICE:
            if not _is_full(v):
                a, b, c = _bounds(v)
                axes += [dim]
                starts += [a]
                ends += [b]
                steps += [c]
            dim += 1
        elif k == _BOOL:
            if list(v.shape) != x.shape[dim:dim + v.ndim]:
                raise IndexError(f"getitem: boolean index of shape {list(v.shape)} does not match the "
                                 f"indexed dims {x.shape[dim:dim + v.ndim]} of the tensor")
            groups.append((dim, v.ndim, v))
            dim += v.ndim
        else:
            groups.append((dim, 1, v if k == _ADV else _to_tensor(v, DataType.int64, x.place)))
            dim += 1
    if axes:
        x = _slice(x, axes, starts, ends, steps)
    if len(groups) == 1:
        d, n, t = groups[0]
        if n == 1 and t.dtype != DataType.bool:
            return _ops.gather(x, t, d)
        if d == 0 and n == x.ndim:
            return _ops.masked_select(x, t)
    adv_dims = [d + j for d, n, _ in groups for j in range(n)]
    others = [d for d in range(x.ndim) if d not in adv_dims]
    perm = adv_dims + others
    if perm != list(range(x.ndim)):
        x = _ops.transpose(x, perm)
    out = _ops._index_get(x, [t for _, _, t in groups])
    first = adv_dims[0]
    if first > 0 and adv_dims == list(range(first, first + len(adv_dims))):
        nb = out.ndim - len(others)  # the broadcast index dims go back to where they were
        perm = [nb + i for i in range(first)] + list(range(nb)) + \
               [nb + i for i in range(first, len(others))]
        out = _ops.transpose(out, perm)
    return out


def _getitem(self, idx):
    t = type(idx)
    if t is int:  # the hot paths: x[i], x[a:b]
        if self.ndim == 0:
            raise IndexError("getitem: too many indices for a tensor of dimension 0")
        return _select(self, 0, idx)
    if t is slice and self.ndim > 0:
        a, b, c = _bounds(idx)
        return _slice(self, [0], [a], [b], [c])
    entries, adv = _parse(self, idx)
    return _advanced(self, entries) if adv else _basic(self, entries)


# ---------------------------------------------------------------- setitem

def _value(x, value):
    """value as a Tensor of x's dtype (a differentiable cast for Tensors)."""
    if isinstance(value, Tensor):
        return value if value.dtype == x.dtype else _ops.cast(value, x.dtype)
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    return _to_tensor(value, x.dtype, x.place)


def _broadcast_to(v, shape):
    """v expanded (a view) to `shape` under assignment rules: v may carry extra leading
    1-sized dims, and broadcasts the other way only."""
    vs = list(v.shape)
    if vs == shape:
        return v
    extra = len(vs) - len(shape)
    if extra > 0:
        if any(d != 1 for d in vs[:extra]):
            raise ValueError(f"setitem: value of shape {vs} cannot be broadcast to the indexed "
                             f"shape {shape}")
        vs = vs[extra:]
        v = _ops.reshape(v, vs)
    for a, b in zip(vs[::-1], shape[::-1]):
        if a != b and a != 1:
            raise ValueError(f"setitem: value of shape {list(v.shape)} cannot be broadcast to the "
                             f"indexed shape {shape}")
    return _ops.expand(v, shape)


def _write_view(view, x, value):
    """Copies value (broadcast) into a view of x, without autograd."""
    if type(value) in (float, int, bool):
        view._copy_from(_filler(view, value))
        return
    if isinstance(value, Tensor):
        if value._may_overlap(view):
            value = _ops.assign(value)  # x[1:] = x[:-1] must read before it writes
    else:
        value = _to_tensor(np.asarray(value) if isinstance(value, (list, tuple)) else value,
                           x.dtype, x.place)
    view._copy_from(_broadcast_to(value, view.shape))


def _set_basic_grad(x, entries, value):
    """x[basic index] = value as one slice_scatter_ (autograd, and to_static: the op is
    traced). The value is shaped with squeeze/unsqueeze only, never with sizes read from
    x, so a dynamic dim of a converted program stays dynamic."""
    shape = x.shape
    axes, starts, ends, steps, target = [], [], [], [], []
    new_dims, int_dims = [], []  # target dims the region lacks (None, True); region dims the target lacks (ints)
    dim = 0
    for kind, v in entries:
        if kind == _SLICE:
            n = shape[dim]
            if not _is_full(v):
                a, b, c = _bounds(v)
                axes.append(dim)
                starts.append(a)
                ends.append(b)
                steps.append(c)
                n = len(range(*slice(v.start, v.stop, v.step).indices(n)))
            target.append(n)
            dim += 1
        elif kind == _INT:
            n = shape[dim]
            if not -n <= v < n:
                raise IndexError(f"setitem: index {v} is out of bounds for axis {dim} with "
                                 f"size {n}")
            axes.append(dim)
            starts.append(v)
            ends.append(v + 1 if v != -1 else _MAX)
            steps.append(1)
            int_dims.append(dim)
            dim += 1
        else:
            if kind == _PYBOOL and not v:
                return  # x[False] = v selects nothing
            new_dims.append(len(target))
            target.append(1)
    target += shape[dim:]
    v = _value(x, value)
    vs = list(v.shape)
    extra = len(vs) - len(target)
    if extra > 0 and any(d != 1 for d in vs[:extra]):
        raise ValueError(f"setitem: value of shape {vs} cannot be broadcast to the indexed shape {target}")
    if any(a != b and a != 1 for a, b in zip(vs[::-1], target[::-1])):
        raise ValueError(f"setitem: value of shape {vs} cannot be broadcast to the indexed shape {target}")
    if extra > 0:
        v = _ops.squeeze(v, list(range(extra)))
    elif extra < 0:
        v = _unsqueeze(v, list(range(-extra)))
    if new_dims:
        v = _ops.squeeze(v, new_dims)
    if int_dims:
        v = _unsqueeze(v, int_dims)
    _ops.slice_scatter_(x, v, axes, starts, ends, steps)


def _tracing():
    """True inside oar.jit.to_static's trace (writes must then be ops the tracer sees)."""
    return bool(_trace_state.active)


def _set_advanced(x, entries, value):
    v = _value(x, value)
    kinds = [k for k, _ in entries]
    n = len(kinds)
    while n and kinds[n - 1] == _SLICE and _is_full(entries[n - 1][1]):
        n -= 1
    if all(k in (_ADV, _BOOL, _INT) for k in kinds[:n]):
        # Advanced indices on the leading dims only: one index_put_.
        lead = entries[:n]
        idx = [val if k != _INT else _to_tensor(val, DataType.int64, x.place) for k, val in lead]
        covered = sum(val.ndim if k == _BOOL else 1 for k, val in lead)
        nb = max([1 if k == _BOOL else val.ndim for k, val in lead if k != _INT] + [0])
        rank = nb + x.ndim - covered
        if v.ndim > rank:
            if any(d != 1 for d in v.shape[:v.ndim - rank]):
                raise ValueError(f"setitem: value of shape {list(v.shape)} cannot be broadcast to "
                                 f"the indexed positions")
            v = _ops.reshape(v, v.shape[v.ndim - rank:])
        _ops.index_put_(x, idx, v, False)
        return
    # General case: let NumPy map every written element to its coordinates in x.
    np_idx = []
    for k, val in entries:
        if k in (_ADV, _BOOL):
            np_idx.append(val.numpy())
        elif k == _NONE:
            np_idx.append(None)
        elif k == _SLICE:
            np_idx.append(slice(*(None if b is None else operator.index(b)
                                  for b in (val.start, val.stop, val.step))))
        else:
            np_idx.append(val)
    shape = x.shape
    try:
        pos = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[tuple(np_idx)]
    except IndexError as e:
        raise IndexError(f"setitem: {e}") from None
    coords = [_to_tensor(np.ascontiguousarray(c), DataType.int64, x.place)
              for c in np.unravel_index(pos, shape)]
    _ops.index_put_(x, coords, _broadcast_to(v, list(pos.shape)), False)


def _setitem(self, idx, value):
    no_grad = ((self.stop_gradient and (not isinstance(value, Tensor) or value.stop_gradient))
               or not _grad_enabled()) and not _tracing()
    t = type(idx)
    if no_grad and (t is int or t is slice) and self.ndim > 0:  # the hot paths
        if t is int:
            view = _select(self, 0, idx)
        else:
            a, b, c = _bounds(idx)
            view = _slice(self, [0], [a], [b], [c])
        _write_view(view, self, value)
        return
    entries, adv = _parse(self, idx)
    if adv:
        if any(k == _PYBOOL for k, _ in entries):
            raise IndexError("setitem: a Python bool index cannot be combined with tensor "
                             "indices")
        _set_advanced(self, entries, value)
    elif no_grad:
        _write_view(_basic(self, entries), self, value)
    else:
        _set_basic_grad(self, entries, value)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem


# ---------------------------------------------------------------- op shims

def split(x, num_or_sections, axis=0, name=None):
    """Splits x along axis into num_or_sections equal parts (an int) or parts of the
    given sizes (a list, which may hold one -1). Returns a list of Tensors."""
    if isinstance(num_or_sections, (list, tuple)) or (
            isinstance(num_or_sections, Tensor) and num_or_sections.ndim == 1):
        return _ops.split(x, num_or_sections, axis)
    return _ops._split_with_num(x, num_or_sections, axis)


def nonzero(x, as_tuple=False):
    """Coordinates [N, rank] (int64) of the non-zero elements; as_tuple gives one 1-D [N]
    tensor per dimension (Paddle 3.x takes out[:, j], like numpy.nonzero)."""
    out = _ops.nonzero(x)
    if not as_tuple:
        return out
    return tuple(_select(out, 1, j) for j in range(x.ndim))


def where(condition, x=None, y=None, name=None):
    """x where condition else y (broadcast); where(condition) is nonzero(condition, as_tuple=True)."""
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither")
    return _ops.where(condition, x, y)


Tensor.split = split
Tensor.nonzero = nonzero

# Installed into oar._ops (which imports this module last), so `oar.split` is the shim.
_ops_module = sys.modules[__package__ + "._ops"]
for _f in (split, nonzero, where):
    setattr(_ops_module, _f.__name__, _f)
