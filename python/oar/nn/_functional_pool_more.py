"""Power-average pooling (lp_pool1d/2d) and max unpooling (max_unpool1d/2d/3d), composed of
avg_pool2d and put_along_axis so autograd runs through them."""
import math
import numbers

from .._C import Tensor, ops as _ops
from ._functional_cnn import _tuple

__all__ = ["lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _check_x(x, rank, op, fmt):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim != rank:
        raise ValueError(f"{op}: x must be {rank}-D ({fmt}), got shape {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")


def _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, nd, op):
    from . import functional as F
    fmts = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC")}[nd]
    if data_format not in fmts:
        raise ValueError(f"{op}: data_format must be '{fmts[0]}' or '{fmts[1]}', got "
                         f"'{data_format}'")
    _check_x(x, nd + 2, op, data_format)
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real) or \
            not math.isfinite(norm_type) or norm_type <= 0:
        raise ValueError(f"{op}: norm_type must be a finite number > 0, got {norm_type!r}")
    k = _tuple(kernel_size, nd, op, "kernel_size")
    s = k if stride is None else _tuple(stride, nd, op, "stride")
    p = _tuple(padding, nd, op, "padding", lo=0)
    if data_format in ("NLC", "NHWC"):  # channels last -> first
        x = x.transpose([0, nd + 1] + list(range(1, nd + 1)))
    xp = x.pow(float(norm_type))
    if nd == 1:
        xp, k, s, p = xp.unsqueeze(2), [1] + k, [1] + s, [0] + p
    # divisor_override=1: the window sums of x**p, padding adding zeros
    sums = F.avg_pool2d(xp, k, s, p, ceil_mode=ceil_mode, exclusive=False, divisor_override=1)
    out = sums.pow(1.0 / float(norm_type))
    if nd == 1:
        out = out.squeeze(2)
    if data_format in ("NLC", "NHWC"):
        out = out.transpose([0] + list(range(2, nd + 2)) + [1])
    return out


def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False,
              data_format="NCL", name=None):
    """(sum over each window of x**norm_type) ** (1 / norm_type) on [N, C, L]."""
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 1,
                    "lp_pool1d")


def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False,
              data_format="NCHW", name=None):
    """(sum over each window of x**norm_type) ** (1 / norm_type) on [N, C, H, W]."""
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 2,
                    "lp_pool2d")


def _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, nd, op):
    import oar
    fmt = {1: "NCL", 2: "NCHW", 3: "NCDHW"}[nd]
    if data_format != fmt:
        raise ValueError(f"{op}: data_format must be '{fmt}', got '{data_format}'")
    _check_x(x, nd + 2, op, fmt)
    if not isinstance(indices, Tensor) or indices.dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op}: indices must be an int32/int64 Tensor (max_pool's mask), got "
                        f"{getattr(indices, 'dtype', type(indices).__name__)}")
    if list(indices.shape) != list(x.shape):
        raise ValueError(f"{op}: indices {list(indices.shape)} must have x's shape "
                         f"{list(x.shape)}")
    k = _tuple(kernel_size, nd, op, "kernel_size")
    s = k if stride is None else _tuple(stride, nd, op, "stride")
    p = _tuple(padding, nd, op, "padding", lo=0)
    n, c = x.shape[0], x.shape[1]
    default = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd)]
    if output_size is None:
        out = default
    else:
        out = [int(v) for v in output_size][-nd:]
        if len(out) != nd:
            raise ValueError(f"{op}: output_size must list {nd} (or {nd + 2}) sizes, got "
                             f"{output_size}")
        for i in range(nd):  # as Paddle: within one stride of the default size
            if not default[i] - s[i] < out[i] < default[i] + s[i]:
                raise ValueError(f"{op}: output_size {out} must be within one stride of "
                                 f"{default} in each dim")
    if any(v <= 0 for v in out):
        raise ValueError(f"{op}: the output size {out} must be positive")
    plane = math.prod(out)
    if plane > 2 ** 40:
        raise MemoryError(f"{op}: an output of {out} per channel is too large")
    flat_i = indices.reshape([n, c, -1]).astype("int64")
    if flat_i.size:
        lo, hi = int(flat_i.min()), int(flat_i.max())
        if lo < 0 or hi >= plane:
            raise ValueError(f"{op}: indices must be in [0, {plane}) for an output of "
                             f"{out}, got values in [{lo}, {hi}]")
    canvas = _ops.full([n, c, plane], 0.0, x.dtype, x.place)
    res = oar.put_along_axis(canvas, flat_i, x.reshape([n, c, -1]), axis=2)
    return res.reshape([n, c] + out)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL",
                 output_size=None, name=None):
    """Puts each value of x [N, C, L] at its max_pool1d index of a zero [N, C, L_out]."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW",
                 output_size=None, name=None):
    """Puts each value of x [N, C, H, W] at its max_pool2d index (flat over H_out * W_out)."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW",
                 output_size=None, name=None):
    """Puts each value of x [N, C, D, H, W] at its max_pool3d index."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 3,
                       "max_unpool3d")
