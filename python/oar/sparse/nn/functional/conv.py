"""Sparse convolution and max pooling (channels-last: NHWC / NDHWC), on Oar's dense kernels.

The input is a COO tensor whose sparse dims are the batch and spatial dims and whose values are
the channels [nnz, C]. A regular convolution stores every output site its kernel window sees an
active input site in; a submanifold convolution (subm_*) stores exactly the input's sites,
with the kernel centred on them, so the pattern does not grow. Max pooling takes the max over
the active sites of each window only. Each runs the dense kernel on the scattered input and
gathers the active outputs, so gradients reach the values, the weight and the bias.
"""
import numpy as np

import oar
import oar.nn.functional as F

from ..._tensor import SparseCooTensor, _fail, _index_tensor
from ...unary import check_sparse

__all__ = ["conv2d", "conv3d", "subm_conv2d", "subm_conv2d_igemm", "subm_conv3d",
           "subm_conv3d_igemm", "max_pool3d"]

_LAYOUT = {2: "NHWC", 3: "NDHWC"}


def _tuple(op, arg, v, n, low):
    vals = [v] * n if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else list(v)
    if len(vals) != n or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < low
                             for a in vals):
        _fail(op, f"{arg} must be an int >= {low} or {n} of them, got {v!r}")
    return [int(a) for a in vals]


def _site_tensor(op, x, nsp):
    """x as a COO tensor [N, *spatial, C] with sparse dims N and spatial."""
    check_sparse(op, x)
    if x.ndim != nsp + 2:
        _fail(op, f"x must be a {nsp + 2}-D sparse tensor {_LAYOUT[nsp]}, got shape {list(x.shape)}")
    if not x.is_sparse_coo():
        _fail(op, "x must be a COO tensor", TypeError)
    return x if x.sparse_dim() == nsp + 1 else x.to_sparse_coo(nsp + 1)


def _check_format(op, data_format, nsp):
    if data_format != _LAYOUT[nsp]:
        _fail(op, f"data_format must be '{_LAYOUT[nsp]}', got {data_format!r}")


def _indicator(x, dtype):
    """1 at x's sites, 0 elsewhere: [N, *spatial, 1]."""
    ind = np.zeros(x._shape[:-1] + [1], dtype=np.float32)
    idx = x.indices().numpy()
    ind[tuple(idx)] = 1.0
    return oar.to_tensor(ind).astype(dtype)


def _gather_sites(dense, idx, channels):
    if idx.shape[1] == 0:
        return oar.zeros([0, channels], dtype=dense.dtype)
    return oar.gather_nd(dense, _index_tensor(idx.T))


def _conv(op, x, weight, bias, stride, padding, dilation, groups, data_format, subm, nsp):
    _check_format(op, data_format, nsp)
    x = _site_tensor(op, x, nsp)
    if not isinstance(weight, oar.Tensor) or weight.ndim != nsp + 2:
        _fail(op, f"weight must be a {nsp + 2}-D Tensor [*kernel, C_in / groups, C_out], got "
              f"{getattr(weight, 'shape', type(weight).__name__)}", TypeError)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        _fail(op, f"groups must be a positive int, got {groups!r}")
    cin, kernel = x._shape[-1], list(weight.shape[:nsp])
    if weight.shape[nsp] * groups != cin or weight.shape[-1] % groups:
        _fail(op, f"weight {list(weight.shape)} does not fit {cin} input channels in {groups} "
              "groups")
    if bias is not None and (not isinstance(bias, oar.Tensor) or list(bias.shape) != [weight.shape[-1]]):
        _fail(op, f"bias must be a Tensor [{weight.shape[-1]}], got "
              f"{getattr(bias, 'shape', type(bias).__name__)}")
    stride = _tuple(op, "stride", stride, nsp, 1)
    dilation = _tuple(op, "dilation", dilation, nsp, 1)
    if subm:
        if stride != [1] * nsp:
            _fail(op, f"a submanifold convolution keeps the input's sites: stride must be 1, "
                  f"got {stride}", NotImplementedError)
        pad = []
        for k, d in zip(kernel, dilation):
            c = (k - 1) // 2
            pad += [c * d, (k - 1 - c) * d]
    else:
        pad = _tuple(op, "padding", padding, nsp, 0) if not (
            isinstance(padding, (list, tuple)) and len(padding) == 2 * nsp) else \
            _tuple(op, "padding", padding, 2 * nsp, 0)
    perm = [nsp + 1, nsp] + list(range(nsp))  # [*k, Cin/g, Cout] -> [Cout, Cin/g, *k]
    w = oar.transpose(weight, perm)
    conv = F.conv2d if nsp == 2 else F.conv3d
    dense = conv(x.to_dense(), w, bias, stride=stride, padding=pad, dilation=dilation,
                 groups=groups, data_format=data_format)
    cout = weight.shape[-1]
    if subm:
        idx = x.indices().numpy()
    else:
        ones = oar.ones([1, 1] + kernel, dtype="float32")
        hit = conv(_indicator(x, "float32"), ones, stride=stride, padding=pad,
                   dilation=dilation, data_format=data_format)
        idx = np.stack(np.nonzero(hit.numpy()[..., 0] > 0.5)).astype(np.int64).reshape(nsp + 1, -1)
    values = _gather_sites(dense, idx, cout)
    return SparseCooTensor(_index_tensor(idx), values, list(dense.shape), True)


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
    pad = _tuple(op, "padding", padding, 3, 0)
    ind = _indicator(x, x.dtype)
    lowest = oar.full_like(ind, float(np.finfo(np.float64).min) if x.dtype.name == "float64"
                           else float(np.finfo(np.float32).min))
    filled = x.to_dense() + (1 - ind) * lowest  # inactive sites never win
    pooled = F.max_pool3d(filled, kernel, stride=stride, padding=pad, ceil_mode=ceil_mode,
                          data_format="NDHWC")
    hit = F.max_pool3d(_indicator(x, "float32"), kernel, stride=stride, padding=pad,
                       ceil_mode=ceil_mode, data_format="NDHWC")
    idx = np.stack(np.nonzero(hit.numpy()[..., 0] > 0.5)).astype(np.int64).reshape(4, -1)
    values = _gather_sites(pooled, idx, x._shape[-1])
    return SparseCooTensor(_index_tensor(idx), values, list(pooled.shape), True)

