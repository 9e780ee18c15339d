"""oar.nn.functional: convolutions, pooling, normalizations, activations and dropout
(Paddle 3.x names, signatures and defaults). The ops live in paddle_core/ops/cnn.yaml and
nn.yaml; this module resolves Paddle's argument forms (int / list / 'SAME' / 'VALID'
padding, output_size, None strides...) into the ops' explicit attributes."""
import math
import numbers

from .. import _C, _trace_state
from ._inference_ops import no_grad_flows as _no_grad_flows

_ops = _C.ops


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
    if type(v) is int and v >= lo:  # the common forms, before the (slower) ABC checks
        return [v] * nd
    if type(v) is list and len(v) == nd:
        for e in v:
            if type(e) is not int or e < lo:
                break
        else:
            return v[:]
    if isinstance(v, numbers.Integral):
        out = [int(v)] * nd
    else:
        out = [int(e) for e in v]
        if len(out) == 1:
            out = out * nd
    if len(out) != nd or (not isinstance(v, numbers.Integral) and any(o != e for o, e in zip(out, v))):
        # (a fraction such as 1.5 is not truncated)
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
    """Paddle's padding forms -> (explicit [before, after] * nd, is_same). sizes, kernel
    and stride are needed for 'SAME' only."""
    if type(padding) is int and padding >= 0:  # the common form, before the ABC checks
        return [padding] * (2 * nd), False
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


def _check_bias(bias, c, op):
    shape = bias.shape
    if len(shape) != 1 or shape[0] != c:
        raise ValueError(f"{op}: bias must have shape [{c}], got {list(bias.shape)}")


def _add_bias(out, bias, nd, last, op):
    if bias is None:
        return out
    c = out.shape[-1] if last else out.shape[1]
    _check_bias(bias, c, op)
    return out + (bias if last else _ops.reshape(bias, [c] + [1] * nd))


# ---------------------------------------------------------------- convolution
def _conv(x, weight, bias, stride, padding, dilation, groups, data_format, nd, op):
    last = _channels_last(data_format, nd, op)
    _check_rank(x, nd, op)
    _check_rank(weight, nd, op, "weight")
    stride = _tuple(stride, nd, op, "stride")
    dilation = _tuple(dilation, nd, op, "dilation")
    if isinstance(padding, str):
        pads, same = _paddings(padding, nd, op, last, _spatial(x, nd, last), list(weight.shape[2:]), stride)
    else:
        pads, same = _paddings(padding, nd, op, last)
    if same:
        dilation = [1] * nd
    if not (type(groups) is int or isinstance(groups, numbers.Integral)) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups}")
    # Where no gradient flows, the predictor's inference convolution: conv2d's kernel tunes
    # its candidates with the filter reorder in their time (a training step's filter is new
    # at every call), fused_conv2d's packs each filter once (Note [Eager inference ops]).
    if nd == 2 and _no_grad_flows((x, weight, bias)):
        if bias is not None:
            _check_bias(bias, weight.shape[0], op)
        return _ops.fused_conv2d(x, weight, bias, stride, pads, dilation, int(groups), data_format, "")
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


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                     groups=1, output_size=None, data_format="NCHW", name=None):
    """Transposed 2-D convolution; weight [in_channels, out_channels / groups, kh, kw].
    Paddle's argument order: dilation before groups here (conv1d/3d_transpose: groups first)."""
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
    if nd == 2 and not return_mask and (x.stop_gradient or not _C.is_grad_enabled()):
        # No backward will read the argmax: the kernel without it, as canonicalize picks in
        # programs (same values; ResNet-18's [1, 64, 32, 32] 3x3/2 pool 122 -> 56 us).
        return _ops.max_pool2d(x, kernel, stride, pads, bool(ceil_mode), False, data_format)
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


# ---------------------------------------------------------------- normalizations
def _affine_arg(t, n, op, name):
    if t is None:
        return None
    if int(math.prod(t.shape)) != n:
        raise ValueError(f"{op}: {name} must have {n} elements, got shape {list(t.shape)}")
    return t


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9,
               epsilon=1e-05, data_format="NCHW", use_global_stats=None, name=None):
    """Paddle's batch_norm. In training (unless use_global_stats) the batch statistics
    normalize x and the running statistics are updated in place:
    running = momentum * running + (1 - momentum) * batch (biased batch variance)."""
    if use_global_stats is None:
        use_global_stats = not training
    out, mean_out, var_out, _, _ = _ops.batch_norm(
        x, running_mean, running_var, weight, bias, bool(training), float(momentum),
        float(epsilon), data_format, bool(use_global_stats))
    if training and not use_global_stats:
        running_mean._copy_from(mean_out.detach())
        running_var._copy_from(var_out.detach())
    return out


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalizes over the trailing dims given by normalized_shape."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = [normalized_shape]
    normalized_shape = [int(n) for n in normalized_shape]
    shape = list(x.shape)
    if not normalized_shape or len(normalized_shape) > len(shape) or \
            shape[len(shape) - len(normalized_shape):] != normalized_shape:
        raise ValueError(f"layer_norm: normalized_shape {normalized_shape} does not match the "
                         f"trailing dims of x's shape {shape}")
    begin = len(shape) - len(normalized_shape)
    return _ops.layer_norm(x, weight, bias, float(epsilon), begin)[0]


def _to_channels_first(x, nd):
    return _ops.transpose(x, [0, nd + 1] + list(range(1, nd + 1)))


def _to_channels_last(x, nd):
    return _ops.transpose(x, [0] + list(range(2, nd + 2)) + [1])


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW",
               name=None):
    op = "group_norm"
    if data_format not in ("NCHW", "NHWC", "NCL", "NLC", "NCDHW", "NDHWC", "NC"):
        raise ValueError(f"{op}: data_format must be channels first (NC...) or last (N...C), "
                         f"got '{data_format}'")
    last = data_format[-1] == "C" and data_format != "NC"
    nd = len(x.shape) - 2
    if last and nd > 0:
        x = _to_channels_first(x, nd)
    out = _ops.group_norm(x, weight, bias, float(epsilon), int(num_groups))[0]
    return _to_channels_last(out, nd) if last and nd > 0 else out


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Per-sample, per-channel normalization (group_norm with one channel per group)."""
    if len(x.shape) < 3:
        raise ValueError(f"instance_norm: x must be [N, C, ...] with spatial dims, got shape "
                         f"{list(x.shape)}")
    last = data_format in ("NHWC", "NLC", "NDHWC")
    c = x.shape[-1] if last else x.shape[1]
    return group_norm(x, c, eps, weight, bias, data_format)


def rms_norm(x, normalized_shape, weight=None, eps=1e-06, name=None):
    """x / sqrt(mean(x^2 over the normalized dims) + eps) * weight."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = [normalized_shape]
    n = len(normalized_shape)
    if list(x.shape[len(x.shape) - n:]) != list(normalized_shape):
        raise ValueError(f"rms_norm: normalized_shape {list(normalized_shape)} does not match "
                         f"the trailing dims of x's shape {list(x.shape)}")
    axes = list(range(len(x.shape) - n, len(x.shape)))
    out = x * _ops.rsqrt(_ops.mean(x * x, axes, True) + float(eps))
    return out if weight is None else out * weight


def local_response_norm(x, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """x / (k + alpha / size * sum over `size` neighbouring channels of x^2) ** beta."""
    if len(x.shape) < 3:
        raise ValueError(f"local_response_norm: x must be at least 3-D, got {list(x.shape)}")
    last = data_format[-1] == "C"
    nd = len(x.shape) - 2
    xc = _to_channels_first(x, nd) if last else x
    sq = _ops.unsqueeze(xc * xc, [1])  # [N, 1, C, *S]
    c = xc.shape[1]
    flat = _ops.reshape(sq, [xc.shape[0], 1, c, -1])
    summed = avg_pool2d(flat, [size, 1], stride=1, padding=[size // 2, (size - 1) // 2, 0, 0],
                        exclusive=False)
    div = _ops.reshape(summed, list(xc.shape)) * float(alpha) + float(k)
    out = xc / _ops.pow(div, float(beta))
    return _to_channels_last(out, nd) if last else out


# ---------------------------------------------------------------- activations
def relu6(x, name=None):
    return _ops.relu6(x)


def leaky_relu(x, negative_slope=0.01, name=None):
    return _ops.leaky_relu(x, float(negative_slope))


def elu(x, alpha=1.0, name=None):
    return _ops.elu(x, float(alpha))


def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717,
         name=None):
    if scale <= 1.0:
        raise ValueError(f"selu: scale must be greater than 1.0, got {scale}")
    if alpha < 0:
        raise ValueError(f"selu: alpha must be no less than zero, got {alpha}")
    return _ops.selu(x, float(scale), float(alpha))


def celu(x, alpha=1.0, name=None):
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return _ops.celu(x, float(alpha))


def silu(x, inplace=False, name=None):
    """x * sigmoid(x); inplace=True also writes the result into x and returns x."""
    out = _ops.silu(x)
    return x.copy_(out) if inplace else out


def swish(x, name=None):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"swish: argument 'x' must be a Tensor, got {type(x).__name__}")
    return _ops.silu(x)


def mish(x, name=None):
    return _ops.mish(x)


def softplus(x, beta=1, threshold=20, name=None):
    return _ops.softplus(x, float(beta), float(threshold))


def softsign(x, name=None):
    return _ops.softsign(x)


def hardswish(x, name=None):
    return _ops.hardswish(x)


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    return _ops.hardsigmoid(x, float(slope), float(offset))


def hardtanh(x, min=-1.0, max=1.0, name=None):  # noqa: A002  (Paddle's names)
    if min > max:
        raise ValueError(f"hardtanh: min ({min}) must not exceed max ({max})")
    return _ops.hardtanh(x, float(min), float(max))


def tanhshrink(x, name=None):
    return _ops.tanhshrink(x)


def hardshrink(x, threshold=0.5, name=None):
    return _ops.hardshrink(x, float(threshold))


def softshrink(x, threshold=0.5, name=None):
    if threshold < 0:
        raise ValueError(f"softshrink: threshold must be non-negative, got {threshold}")
    return _ops.softshrink(x, float(threshold))


def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    return _ops.thresholded_relu(x, float(threshold), float(value))


def log_sigmoid(x, name=None):
    return _ops.log_sigmoid(x)


def prelu(x, weight, data_format="NCHW", name=None):
    """max(0, x) + weight * min(0, x); weight has 1 element or one per channel."""
    n = int(math.prod(weight.shape))
    if len(x.shape) == 0:
        raise ValueError("prelu: x must have at least 1 dimension")
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError(f"prelu: unknown data_format '{data_format}'")
    if n != 1:
        last = data_format[-1] == "C" and data_format != "NC"
        ch_axis = len(x.shape) - 1 if last else 1
        if len(x.shape) < 2 or x.shape[ch_axis] != n:
            raise ValueError(f"prelu: weight has {n} elements but x of shape {list(x.shape)} has "
                             f"{x.shape[ch_axis] if len(x.shape) >= 2 else 1} channels")
        shape = [1] * len(x.shape)
        shape[ch_axis] = n
        w = _ops.reshape(weight, shape)
    else:
        w = _ops.reshape(weight, [1] * len(x.shape)) if len(x.shape) else _ops.reshape(weight, [])
    return _ops._prelu(x, w)


def glu(x, axis=-1, name=None):
    """a * sigmoid(b) with a, b the two halves of x along axis."""
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"glu: axis {axis} is out of range for x of shape {list(x.shape)}")
    if x.shape[axis] % 2:
        raise ValueError(f"glu: the size of x along axis {axis} must be even, got {x.shape[axis]}")
    return _ops._glu(x, axis)


# ---------------------------------------------------------------- dropout
def _check_p(p, op):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be a float in [0, 1], got {p}")


def _keep_mask(shape, p, x):
    """The keep draws of a dropout of x, on x's place."""
    from .._creation import _rand_on
    return (_rand_on(x.place, shape, "float32") >= p).astype(x.dtype)


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """Zeroes elements with probability p (whole slices along the dims not in `axis`
    share one draw). upscale_in_train scales kept values by 1 / (1 - p) in training;
    downscale_in_infer scales by (1 - p) at inference instead."""
    _check_p(p, "dropout")
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got '{mode}'")
    if not training:
        return x if mode == "upscale_in_train" else x * (1.0 - p)
    if p == 0.0:
        return x
    rank = len(x.shape)
    sizes = _trace_state.sizes_of(x)  # a traced program's dynamic sizes are read at run time
    if axis is None:
        mshape = sizes
    else:
        axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
        if any(not -rank <= a < rank for a in axes) or len(set(a % rank for a in axes)) != len(axes):
            raise ValueError(f"dropout: axis {axis} is invalid for x of shape {list(x.shape)}")
        axes = [a % rank for a in axes]
        mshape = [s if i in axes else 1 for i, s in enumerate(sizes)]
    if p == 1.0:
        return x * 0.0
    keep = _keep_mask(mshape, p, x)
    if mode == "upscale_in_train":  # the mask scaled first: one pass over x when it broadcasts
        keep = keep * (1.0 / (1.0 - p))
    return x * keep


def _dropout_nd(x, p, training, data_format, nd, op):
    _check_p(p, op)
    if len(x.shape) != nd + 2:
        raise ValueError(f"{op}: x must be a {nd + 2}-D tensor, got shape {list(x.shape)}")
    last = _channels_last(data_format, nd, op)
    return dropout(x, p, axis=[0, nd + 1] if last else [0, 1], training=training)


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    return _dropout_nd(x, p, training, data_format, 2, "dropout2d")


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    return _dropout_nd(x, p, training, data_format, 3, "dropout3d")


def alpha_dropout(x, p=0.5, training=True, name=None):
    """Dropout that keeps SELU's self-normalization: dropped values become -alpha*scale
    and an affine correction restores zero mean and unit variance."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0.0:
        return x
    alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    if p == 1.0:
        return x * 0.0
    a = ((1.0 - p) * (1.0 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = _keep_mask(_trace_state.sizes_of(x), p, x)
    return (x * keep + (1.0 - keep) * alpha_p) * a + b


def _public():
    import types
    return [n for n, v in globals().items()
            if not n.startswith("_") and isinstance(v, types.FunctionType)]


__all__ = _public()


# Composites over 2-D kernels: their errors name the 1-D functional called.
from ._errors import named_errors as _named_errors  # noqa: E402

conv1d = _named_errors("conv1d")(conv1d)
conv1d_transpose = _named_errors("conv1d_transpose")(conv1d_transpose)
max_pool1d = _named_errors("max_pool1d")(max_pool1d)
avg_pool1d = _named_errors("avg_pool1d")(avg_pool1d)
