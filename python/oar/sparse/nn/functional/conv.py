"""Sparse convolution and max pooling (channels-last: NHWC / NDHWC) by rulebooks.

The input is a COO tensor whose sparse dims are the batch and spatial dims and whose values are
the channels [nnz, C]. A regular convolution stores every output site whose kernel window
holds an active input site; a submanifold convolution (subm_*) stores exactly the input's
sites, with the kernel centred on them, so the pattern does not grow. Max pooling takes the
max over the active sites of each window only (a window with none stores nothing).

For each kernel offset, a rulebook lists the (input row, output row) pairs it connects (NumPy on
the indices); the output is sum over offsets of index_add(out rows, gathered input rows @
W[offset]) for convolution, and a max-scatter of gathered rows for pooling. Memory is
O(nnz * kernel volume), never the dense volume, and gradients reach the values, the weight and
the bias through Oar's gather/matmul/index_add.
"""
import itertools

import numpy as np

import oar

from ...._creation import _full_on
from ..._tensor import SparseCooTensor, _fail, _index_tensor, _linear
from ...unary import check_sparse

__all__ = ["conv2d", "conv3d", "subm_conv2d", "subm_conv2d_igemm", "subm_conv3d",
           "subm_conv3d_igemm", "max_pool3d"]

_LAYOUT = {2: "NHWC", 3: "NDHWC"}
_MAX_KERNEL_VOLUME = 1 << 20  # the rulebooks loop over kernel offsets in Python


def _tuple(op, arg, v, n, low):
    vals = [v] * n if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else list(v)
    if len(vals) != n or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < low
                             for a in vals):
        _fail(op, f"{arg} must be an int >= {low} or {n} of them, got {v!r}")
    return [int(a) for a in vals]


def _site_tensor(op, x, nsp):
    """x as a coalesced COO tensor [N, *spatial, C] with sparse dims N and spatial."""
    check_sparse(op, x)
    if x.ndim != nsp + 2:
        _fail(op, f"x must be a {nsp + 2}-D sparse tensor {_LAYOUT[nsp]}, got shape {list(x.shape)}")
    if not x.is_sparse_coo():
        _fail(op, "x must be a COO tensor", TypeError)
    x = x if x.sparse_dim() == nsp + 1 else x.to_sparse_coo(nsp + 1)
    return x.coalesce()


def _check_format(op, data_format, nsp):
    if data_format != _LAYOUT[nsp]:
        _fail(op, f"data_format must be '{_LAYOUT[nsp]}', got {data_format!r}")


def _padding(op, padding, nsp):
    """[(before, after)] per spatial dim from an int, nsp ints or 2 * nsp ints."""
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * nsp:
        p = _tuple(op, "padding", padding, 2 * nsp, 0)
        return [(p[2 * i], p[2 * i + 1]) for i in range(nsp)]
    p = _tuple(op, "padding", padding, nsp, 0)
    return [(v, v) for v in p]


def _out_dims(op, spatial, kernel, stride, pad, dilation, ceil_mode=False):
    out = []
    for d, k, s, (pb, pa), dl in zip(spatial, kernel, stride, pad, dilation):
        span = d + pb + pa - dl * (k - 1) - 1
        n = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (n - 1) * s >= d + pb:  # the last window must start inside
            n -= 1
        if n <= 0:
            _fail(op, f"the kernel {kernel} (dilation {dilation}) does not fit the padded input "
                  f"{spatial} (padding {pad}): the output would have size {n}")
        out.append(n)
    return out


def _rulebook(coords, offsets, stride, pad_before, dilation, out_dims):
    """For regular convolution / pooling: (in_rows, out_coords) per kernel offset, where
    out = (in + pad_before - offset * dilation) / stride lands on the output grid."""
    rules = []
    for k in offsets:
        num = coords[:, 1:] + pad_before - np.asarray(k) * dilation
        ok = np.all((num % stride == 0) & (num >= 0) & (num // stride < out_dims), axis=1)
        rows = np.nonzero(ok)[0]
        rules.append((rows, np.concatenate([coords[rows, :1], num[rows] // stride], axis=1)))
    return rules


def _linear_sites(coords, dims):
    return _linear(coords.T, dims)


def _regular_pairs(x, kernel, stride, pad, dilation, out_dims):
    """(pairs per offset [(in_rows, out_rows)], output site coordinates [n_out, 1 + nsp])."""
    coords = x.indices().numpy().T
    offsets = list(itertools.product(*[range(k) for k in kernel]))
    rules = _rulebook(coords, offsets, np.asarray(stride), np.asarray([p[0] for p in pad]),
                      np.asarray(dilation), np.asarray(out_dims))
    dims = [x.shape[0]] + out_dims
    allc = np.concatenate([r[1] for r in rules]) if rules else np.zeros((0, len(dims)), np.int64)
    lin_all = _linear_sites(allc, dims)
    uniq, inverse = np.unique(lin_all, return_inverse=True)
    out_coords = np.stack(np.unravel_index(uniq, dims), axis=1) if uniq.size else \
        np.zeros((0, len(dims)), np.int64)
    pairs, start = [], 0
    for rows, oc in rules:
        pairs.append((rows, inverse.reshape(-1)[start:start + len(rows)]))
        start += len(rows)
    return offsets, pairs, out_coords


def _subm_pairs(x, kernel, dilation):
    """Submanifold rulebook: output sites are the input's; offset k reads the input at
    out - centre * dilation + k * dilation when that site is active."""
    coords = x.indices().numpy().T
    dims = list(x.shape[:-1])
    lin = _linear_sites(coords, dims)  # sorted: x is coalesced
    centre = np.asarray([(k - 1) // 2 for k in kernel])
    offsets = list(itertools.product(*[range(k) for k in kernel]))
    pairs = []
    for k in offsets:
        q = coords.copy()
        q[:, 1:] += (np.asarray(k) - centre) * np.asarray(dilation)
        ok = np.all((q[:, 1:] >= 0) & (q[:, 1:] < np.asarray(dims[1:])), axis=1)
        out_rows = np.nonzero(ok)[0]
        ql = _linear_sites(q[out_rows], dims)
        pos = np.searchsorted(lin, ql)
        hit = (pos < lin.size) & (lin[np.minimum(pos, max(lin.size - 1, 0))] == ql) if lin.size else \
            np.zeros(0, dtype=bool)
        pairs.append((pos[hit], out_rows[hit]))
    return offsets, pairs, coords


def _conv(op, x, weight, bias, stride, padding, dilation, groups, data_format, subm, nsp):
    _check_format(op, data_format, nsp)
    x = _site_tensor(op, x, nsp)
    if not isinstance(weight, oar.Tensor) or weight.ndim != nsp + 2:
        _fail(op, f"weight must be a {nsp + 2}-D Tensor [*kernel, C_in / groups, C_out], got "
              f"{getattr(weight, 'shape', type(weight).__name__)}", TypeError)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        _fail(op, f"groups must be a positive int, got {groups!r}")
    cin, kernel, cout = x.shape[-1], list(weight.shape[:nsp]), weight.shape[-1]
    if weight.shape[nsp] * groups != cin or cout % groups:
        _fail(op, f"weight {list(weight.shape)} does not fit {cin} input channels in {groups} "
              "groups")
    if bias is not None and (not isinstance(bias, oar.Tensor) or list(bias.shape) != [cout]):
        _fail(op, f"bias must be a Tensor [{cout}], got "
              f"{getattr(bias, 'shape', type(bias).__name__)}")
    if weight.dtype != x.dtype:
        _fail(op, f"weight ({weight.dtype.name}) and x ({x.dtype.name}) must have the same dtype",
              TypeError)
    stride = _tuple(op, "stride", stride, nsp, 1)
    dilation = _tuple(op, "dilation", dilation, nsp, 1)
    spatial = list(x.shape[1:-1])
    if subm:
        if stride != [1] * nsp:
            _fail(op, f"a submanifold convolution keeps the input's sites: stride must be 1, "
                  f"got {stride}", NotImplementedError)
        offsets, pairs, out_coords = _subm_pairs(x, kernel, dilation)
        out_shape = list(x.shape[:-1]) + [cout]
    else:
        pad = _padding(op, padding, nsp)
        out_dims = _out_dims(op, spatial, kernel, stride, pad, dilation)
        offsets, pairs, out_coords = _regular_pairs(x, kernel, stride, pad, dilation, out_dims)
        out_shape = [x.shape[0]] + out_dims + [cout]
    values, n_out = x.values(), len(out_coords)
    cin_g, cout_g = cin // groups, cout // groups
    out = _full_on(values.place, [n_out, cout], 0.0, x.dtype)
    for k, (in_rows, out_rows) in zip(offsets, pairs):
        if len(in_rows) == 0:
            continue
        rows = oar.index_select(values, _index_tensor(in_rows, values.place), axis=0)
        w = weight[k]  # [C_in / groups, C_out]
        parts = [oar.matmul(rows[:, g * cin_g:(g + 1) * cin_g], w[:, g * cout_g:(g + 1) * cout_g])
                 for g in range(groups)]
        contrib = parts[0] if groups == 1 else oar.concat(parts, axis=1)
        out = oar.index_add(out, _index_tensor(out_rows, values.place), 0, contrib)
    if bias is not None:
        out = out + bias
    return SparseCooTensor(_index_tensor(out_coords.T.reshape(nsp + 1, -1), values.place), out, out_shape, True)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NDHWC", name=None):
    """Sparse 3-D convolution of x [N, D, H, W, C] by weight [kD, kH, kW, C / groups, C_out]."""
    return _conv("conv3d", x, weight, bias, stride, padding, dilation, groups, data_format, False, 3)


def subm_conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                data_format="NDHWC", key=None, name=None):
    """Submanifold 3-D convolution: outputs at x's sites only (padding is implied)."""
    return _conv("subm_conv3d", x, weight, bias, stride, padding, dilation, groups, data_format,
                 True, 3)


def subm_conv3d_igemm(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                      data_format="NDHWC", key=None, name=None):
    """subm_conv3d (Paddle's implicit-GEMM variant computes the same result)."""
    return _conv("subm_conv3d_igemm", x, weight, bias, stride, padding, dilation, groups,
                 data_format, True, 3)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NHWC", name=None):
    """Sparse 2-D convolution of x [N, H, W, C] by weight [kH, kW, C / groups, C_out]."""
    return _conv("conv2d", x, weight, bias, stride, padding, dilation, groups, data_format, False, 2)


def subm_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                data_format="NHWC", key=None, name=None):
    """Submanifold 2-D convolution: outputs at x's sites only (padding is implied)."""
    return _conv("subm_conv2d", x, weight, bias, stride, padding, dilation, groups, data_format,
                 True, 2)


def subm_conv2d_igemm(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                      data_format="NHWC", key=None, name=None):
    """subm_conv2d (Paddle's implicit-GEMM variant computes the same result)."""
    return _conv("subm_conv2d_igemm", x, weight, bias, stride, padding, dilation, groups,
                 data_format, True, 2)


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NDHWC",
               name=None):
    """Max over the active sites of each window of x [N, D, H, W, C]; a window with no
    active site stores no output."""
    op = "max_pool3d"
    _check_format(op, data_format, 3)
    x = _site_tensor(op, x, 3)
    kernel = _tuple(op, "kernel_size", kernel_size, 3, 1)
    stride = kernel if stride is None else _tuple(op, "stride", stride, 3, 1)
    pad = _padding(op, padding, 3)
    if int(np.prod(kernel, dtype=np.int64)) > _MAX_KERNEL_VOLUME:
        _fail(op, f"kernel_size {kernel} has {int(np.prod(kernel, dtype=np.int64))} offsets; at "
              f"most {_MAX_KERNEL_VOLUME} are supported")
    out_dims = _out_dims(op, list(x.shape[1:-1]), kernel, stride, pad, [1, 1, 1], ceil_mode)
    _, pairs, out_coords = _regular_pairs(x, kernel, stride, pad, [1, 1, 1], out_dims)
    src = np.concatenate([p[0] for p in pairs]).astype(np.int64)
    dst = np.concatenate([p[1] for p in pairs]).astype(np.int64)
    c = x.shape[-1]
    if len(out_coords):
        from oar.geometric import send_u_recv
        values = send_u_recv(x.values(), _index_tensor(src, x.values().place), _index_tensor(dst, x.values().place), "max",
                             out_size=len(out_coords))
    else:
        values = _full_on(x.values().place, [0, c], 0.0, x.dtype)
    return SparseCooTensor(_index_tensor(out_coords.T.reshape(4, -1), values.place), values,
                           [x.shape[0]] + out_dims + [c], True)
