"""oar.nn.functional: convolutions, pooling, normalizations, activations and dropout
(Paddle 3.x names, signatures and defaults). The ops live in paddle_core/ops/cnn.yaml and
nn.yaml; this module resolves Paddle's argument forms (int / list / 'SAME' / 'VALID'
padding, output_size, None strides...) into the ops' explicit attributes."""
import math
import numbers

from .. import _C

_ops = _C.ops

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
]

_CF = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
_CL = {1: "NLC", 2: "NHWC", 3: "NDHWC"}


# ---------------------------------------------------------------- argument helpers
def _channels_last(data_format, nd, op):
    if data_format == _CF[nd]:
        return False
    if data_format == _CL[nd]:
        return True
    raise ValueError(f"{op}: data_format must be '{_CF[nd]}' or '{_CL[nd]}', got '{data_format}'")


def _tuple(v, nd, op, name, lo=1):
    """An int or a list of nd ints (Paddle's kernel_size / stride / dilation forms)."""
    if isinstance(v, numbers.Integral):
        out = [int(v)] * nd
    else:
        out = [int(e) for e in v]
        if len(out) == 1:
            out = out * nd
    if len(out) != nd:
        raise ValueError(f"{op}: {name} must be an int or a list of {nd} ints, got {v}")
    if any(e < lo for e in out):
        raise ValueError(f"{op}: {name} must be >= {lo}, got {v}")
    return out


def _spatial(x, nd, last):
    shape = list(x.shape)
    return shape[1:1 + nd] if last else shape[2:2 + nd]


def _check_rank(x, nd, op, name="x"):
    if len(x.shape) != nd + 2:
        raise ValueError(f"{op}: {name} must be a {nd + 2}-D tensor, got shape {list(x.shape)}")


def _same_pads(sizes, kernel, stride):
    pads = []
    for n, k, s in zip(sizes, kernel, stride):
        out = (n + s - 1) // s
        total = max((out - 1) * s + k - n, 0)
        pads += [total // 2, total - total // 2]
    return pads


def _paddings(padding, nd, op, last, sizes=None, kernel=None, stride=None):
    """Paddle's padding forms -> (explicit [before, after] * nd, is_same)."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == "VALID":
            return [0] * (2 * nd), False
        if p == "SAME":
            return _same_pads(sizes, kernel, stride), True
        raise ValueError(f"{op}: padding must be 'SAME', 'VALID', an int or a list, got '{padding}'")
    if isinstance(padding, numbers.Integral):
        pads = [int(padding)] * (2 * nd)
    else:
        padding = list(padding)
        if padding and all(isinstance(e, (list, tuple)) for e in padding):
            if len(padding) != nd + 2:
                raise ValueError(f"{op}: padding given as pairs must have {nd + 2} pairs, got {padding}")
            sp = padding[1:1 + nd] if last else padding[2:]
            other = [padding[0]] + ([padding[-1]] if last else [padding[1]])
            if any(list(o) != [0, 0] for o in other):
                raise ValueError(f"{op}: padding of the batch and channel dims must be 0, got {padding}")
            pads = [int(e) for pair in sp for e in pair]
        elif len(padding) == nd:
            pads = [int(e) for e in padding for _ in range(2)]
        elif len(padding) == 2 * nd:
            pads = [int(e) for e in padding]
        elif len(padding) == 1:
            pads = [int(padding[0])] * (2 * nd)
        else:
            raise ValueError(f"{op}: padding must have {nd} or {2 * nd} values, got {padding}")
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: padding must be non-negative, got {padding}")
    return pads, False


def _add_bias(out, bias, nd, last, op):
    if bias is None:
        return out
    c = out.shape[-1] if last else out.shape[1]
    if list(bias.shape) != [c]:
        raise ValueError(f"{op}: bias must have shape [{c}], got {list(bias.shape)}")
    return out + (bias if last else _ops.reshape(bias, [c] + [1] * nd))


# ---------------------------------------------------------------- convolution
def _conv(x, weight, bias, stride, padding, dilation, groups, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    _check_rank(x, nd, op)
    _check_rank(weight, nd, op, "weight")
    stride = _tuple(stride, nd, op, "stride")
    dilation = _tuple(dilation, nd, op, "dilation")
    kernel = list(weight.shape[2:])
    pads, same = _paddings(padding, nd, op, last, _spatial(x, nd, last), kernel, stride)
    if same:
        dilation = [1] * nd
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups}")
    fn = _ops.conv2d if nd == 2 else _ops.conv3d
    out = fn(x, weight, stride, pads, dilation, int(groups), data_format)
    return _add_bias(out, bias, nd, last, op)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW",
           name=None):
    """2-D convolution; weight [out_channels, in_channels / groups, kh, kw]."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 2, "conv2d")


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NCDHW", name=None):
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 3, "conv3d")


def _as_2d(x, data_format, op):
    """[N, C, L] -> [N, C, 1, L] (or channels last), with the matching 2-D format."""
    last = _channels_last(data_format, 1, op)
    _check_rank(x, 1, op)
    return _ops.unsqueeze(x, [1 if last else 2]), ("NHWC" if last else "NCHW"), last


def _pad1d_to_2d(padding, op, last):
    if isinstance(padding, str):
        return padding
    pads, _ = _paddings(padding, 1, op, last)
    return [0, 0] + pads


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL",
           name=None):
    """1-D convolution through conv2d with a unit height; weight [out, in / groups, k]."""
    op = "conv1d"
    x2, fmt, last = _as_2d(x, data_format, op)
    _check_rank(weight, 1, op, "weight")
    w2 = _ops.unsqueeze(weight, [2])
    pad = _pad1d_to_2d(padding, op, last)
    if isinstance(pad, str) and pad.upper() == "SAME":
        pads, _ = _paddings("SAME", 1, op, last, [x.shape[-1 if last else 2]], [weight.shape[2]],
                            _tuple(stride, 1, op, "stride"))
        pad, dilation = [0, 0] + pads, 1
    out = _conv(x2, w2, None, [1] + _tuple(stride, 1, op, "stride"), pad,
                [1] + _tuple(dilation, 1, op, "dilation"), groups, fmt, 2, op)
    out = _ops.squeeze(out, [1 if last else 2])
    return _add_bias(out, bias, 1, last, op)


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation,
                    output_size, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    _check_rank(x, nd, op)
    _check_rank(weight, nd, op, "weight")
    stride = _tuple(stride, nd, op, "stride")
    dilation = _tuple(dilation, nd, op, "dilation")
    kernel = list(weight.shape[2:])
    sizes = _spatial(x, nd, last)
    pads, same = _paddings(padding, nd, op, last, sizes, kernel, stride)
    if same:
        dilation = [1] * nd
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups}")
    if output_size is not None:
        if output_padding not in (0, None) and any(_tuple(output_padding, nd, op, "output_padding", 0)):
            raise ValueError(f"{op}: give output_size or output_padding, not both")
        target = _tuple(output_size, nd, op, "output_size")
        outpad = []
        for i in range(nd):
            base = (sizes[i] - 1) * stride[i] - pads[2 * i] - pads[2 * i + 1] + \
                dilation[i] * (kernel[i] - 1) + 1
            if not base <= target[i] < base + stride[i]:
                raise ValueError(f"{op}: output_size {list(target)} is not reachable: along spatial "
                                 f"dim {i} it must be in [{base}, {base + stride[i]})")
            outpad.append(target[i] - base)
    else:
        outpad = _tuple(output_padding, nd, op, "output_padding", 0)
    fn = _ops.conv2d_transpose if nd == 2 else _ops.conv3d_transpose
    out = fn(x, weight, stride, pads, outpad, dilation, int(groups), data_format)
    return _add_bias(out, bias, nd, last, op)


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, output_size=None, data_format="NCHW", name=None):
    """Transposed 2-D convolution; weight [in_channels, out_channels / groups, kh, kw]."""
    return _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation,
                           output_size, data_format, 2, "conv2d_transpose")


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, output_size=None, data_format="NCDHW", name=None):
    return _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation,
                           output_size, data_format, 3, "conv3d_transpose")


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, output_size=None, data_format="NCL", name=None):
    op = "conv1d_transpose"
    x2, fmt, last = _as_2d(x, data_format, op)
    _check_rank(weight, 1, op, "weight")
    pad = _pad1d_to_2d(padding, op, last)
    if isinstance(pad, str) and pad.upper() == "SAME":
        pads, _ = _paddings("SAME", 1, op, last, [x.shape[-1 if last else 2]], [weight.shape[2]],
                            _tuple(stride, 1, op, "stride"))
        pad, dilation = [0, 0] + pads, 1
    out = _conv_transpose(
        x2, _ops.unsqueeze(weight, [2]), None, [1] + _tuple(stride, 1, op, "stride"), pad,
        [0] + _tuple(output_padding, 1, op, "output_padding", 0), groups,
        [1] + _tuple(dilation, 1, op, "dilation"),
        None if output_size is None else [1] + _tuple(output_size, 1, op, "output_size"), fmt, 2, op)
    out = _ops.squeeze(out, [1 if last else 2])
    return _add_bias(out, bias, 1, last, op)


# ---------------------------------------------------------------- pooling
def _pool_args(x, kernel_size, stride, padding, nd, last, op):
    _check_rank(x, nd, op)
    kernel = _tuple(kernel_size, nd, op, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, nd, op, "stride")
    pads, _ = _paddings(padding, nd, op, last, _spatial(x, nd, last), kernel, stride)
    return kernel, stride, pads


def _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    kernel, stride, pads = _pool_args(x, kernel_size, stride, padding, nd, last, op)
    fn = _ops.max_pool2d_with_index if nd == 2 else _ops.max_pool3d_with_index
    out, mask = fn(x, kernel, stride, pads, bool(ceil_mode), False, data_format)
    return (out, mask) if return_mask else out


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
              data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    kernel, stride, pads = _pool_args(x, kernel_size, stride, padding, nd, last, op)
    fn = _ops.avg_pool2d if nd == 2 else _ops.avg_pool3d
    if divisor_override is not None:
        if divisor_override <= 0:
            raise ValueError(f"{op}: divisor_override must be positive, got {divisor_override}")
        out = fn(x, kernel, stride, pads, bool(ceil_mode), False, False, data_format)
        return out * (float(math.prod(kernel)) / float(divisor_override))
    return fn(x, kernel, stride, pads, bool(ceil_mode), bool(exclusive), False, data_format)


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               data_format="NCHW", name=None):
    return _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, 2,
                     "max_pool2d")


def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               data_format="NCDHW", name=None):
    return _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, 3,
                     "max_pool3d")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format="NCHW", name=None):
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                     data_format, 2, "avg_pool2d")


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format="NCDHW", name=None):
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                     data_format, 3, "avg_pool3d")


def _pool1d_args(x, kernel_size, stride, padding, op):
    _check_rank(x, 1, op)
    k = _tuple(kernel_size, 1, op, "kernel_size")
    s = k if stride is None else _tuple(stride, 1, op, "stride")
    if isinstance(padding, str):
        pads, _ = _paddings(padding, 1, op, False, [x.shape[2]], k, s)
    else:
        pads, _ = _paddings(padding, 1, op, False)
    return _ops.unsqueeze(x, [2]), [1] + k, [1] + s, [0, 0] + pads


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               name=None):
    op = "max_pool1d"
    x2, k, s, p = _pool1d_args(x, kernel_size, stride, padding, op)
    out, mask = _max_pool(x2, k, s, p, True, ceil_mode, "NCHW", 2, op)
    out, mask = _ops.squeeze(out, [2]), _ops.squeeze(mask, [2])
    return (out, mask) if return_mask else out


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
               name=None):
    op = "avg_pool1d"
    x2, k, s, p = _pool1d_args(x, kernel_size, stride, padding, op)
    return _ops.squeeze(_avg_pool(x2, k, s, p, ceil_mode, exclusive, None, "NCHW", 2, op), [2])


def _adaptive_size(x, output_size, nd, last, op):
    _check_rank(x, nd, op)
    sizes = _spatial(x, nd, last)
    if isinstance(output_size, numbers.Integral):
        out = [int(output_size)] * nd
    else:
        out = list(output_size)
        if len(out) != nd:
            raise ValueError(f"{op}: output_size must be an int or {nd} values, got {output_size}")
        out = [sizes[i] if o is None else int(o) for i, o in enumerate(out)]
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: output_size must be positive, got {output_size}")
    return out


def _adaptive_avg(x, output_size, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    out = _adaptive_size(x, output_size, nd, last, op)
    fn = _ops.avg_pool2d if nd == 2 else _ops.avg_pool3d
    return fn(x, out, [1] * nd, [0] * (2 * nd), False, True, True, data_format)


def _adaptive_max(x, output_size, return_mask, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    out = _adaptive_size(x, output_size, nd, last, op)
    fn = _ops.max_pool2d_with_index if nd == 2 else _ops.max_pool3d_with_index
    o, mask = fn(x, out, [1] * nd, [0] * (2 * nd), False, True, data_format)
    return (o, mask) if return_mask else o


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    return _adaptive_avg(x, output_size, data_format, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    return _adaptive_avg(x, output_size, data_format, 3, "adaptive_avg_pool3d")


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, output_size, return_mask, "NCHW", 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, output_size, return_mask, "NCDHW", 3, "adaptive_max_pool3d")


def adaptive_avg_pool1d(x, output_size, name=None):
    op = "adaptive_avg_pool1d"
    _check_rank(x, 1, op)
    out = _adaptive_size(x, output_size, 1, False, op)
    return _ops.squeeze(_adaptive_avg(_ops.unsqueeze(x, [2]), [1] + out, "NCHW", 2, op), [2])


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    op = "adaptive_max_pool1d"
    _check_rank(x, 1, op)
    out = _adaptive_size(x, output_size, 1, False, op)
    o, mask = _adaptive_max(_ops.unsqueeze(x, [2]), [1] + out, True, "NCHW", 2, op)
    o, mask = _ops.squeeze(o, [2]), _ops.squeeze(mask, [2])
    return (o, mask) if return_mask else o
