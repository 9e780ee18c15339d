"""static.nn layers that make their own parameters (fc, conv2d, batch_norm, embedding):
Paddle's names (fc_0.w_0, ...) and default initialisers; the ops are oar.nn.functional's."""
import numpy as np

from . import _program


def _param(prefix, kind, shape, attr, dtype, is_bias, default_init=None, index=0):
    from ..nn import initializer as init
    from ..nn.layer import ParamAttr, _make_parameter
    from .._dtype import convert_dtype

    attr = ParamAttr._to_attr(attr)
    if attr is False:
        return None
    if default_init is None:
        default_init = init.Constant(0.0) if is_bias else init.XavierUniform()
    name = attr.name or f"{prefix}.{kind}_{index}"
    return _make_parameter(list(shape), attr, convert_dtype(dtype), is_bias, default_init, name)


def _act(x, act):
    if act is None:
        return x
    from ..nn import functional as F

    fn = getattr(F, act, None)
    if fn is None:
        raise ValueError(f"static.nn: unknown activation '{act}'")
    return fn(x)


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    """x (or each of a list of inputs) flattened from dim num_flatten_dims, times a new
    weight [K, size], summed, plus a bias; then the activation."""
    import oar

    _program._check_static("static.nn.fc")
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    prefix = name or _program.unique_name("fc")
    tmp = iter(range(1 << 30))

    def named(t):  # Paddle's names of fc's results: fc_0.tmp_0, fc_0.tmp_1...
        t.name = f"{prefix}.tmp_{next(tmp)}"
        return t

    out = None
    for i, xi in enumerate(xs):
        if not 0 < num_flatten_dims < len(xi.shape):
            raise ValueError(f"static.nn.fc: num_flatten_dims must be in [1, {len(xi.shape) - 1}] for an input of "
                             f"rank {len(xi.shape)}, got {num_flatten_dims}")
        k = int(np.prod(xi.shape[num_flatten_dims:]))
        w = _param(prefix, "w", [k, size], weight_attr, xi.dtype, False, index=i)
        flat = xi if len(xi.shape) == num_flatten_dims + 1 else oar.flatten(xi, start_axis=num_flatten_dims)
        y = named(oar.matmul(flat, w))
        out = y if out is None else out + y
    if len(xs) > 1:
        out = named(out)
    b = _param(prefix, "b", [size], bias_attr, xs[0].dtype, True)
    if b is not None:
        out = named(out + b)
    return named(_act(out, activation)) if activation else out


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    from ..nn import functional as F
    from ..nn import initializer as init

    _program._check_static("static.nn.conv2d")
    groups = groups or 1
    channels = input.shape[1 if data_format == "NCHW" else -1]
    ks = [filter_size] * 2 if isinstance(filter_size, int) else list(filter_size)
    if channels % groups:
        raise ValueError(f"static.nn.conv2d: {channels} input channels do not divide into groups={groups}")
    prefix = name or _program.unique_name("conv2d")
    std = (2.0 / (ks[0] * ks[1] * channels)) ** 0.5  # Paddle's default for conv filters
    w = _param(prefix, "w", [num_filters, channels // groups] + ks, param_attr, input.dtype, False,
               init.Normal(0.0, std))
    b = _param(prefix, "b", [num_filters], bias_attr, input.dtype, True)
    y = F.conv2d(input, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups,
                 data_format=data_format)
    return _act(y, act)


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
               data_layout="NCHW", in_place=False, name=None, moving_mean_name=None, moving_variance_name=None,
               do_model_average_for_mean_and_var=True, use_global_stats=False):
    from ..nn import functional as F
    from ..nn import initializer as init
    from ..nn.layer import ParamAttr

    _program._check_static("static.nn.batch_norm")
    c = input.shape[1 if data_layout == "NCHW" else -1]
    prefix = name or _program.unique_name("batch_norm")
    scale = _param(prefix, "w", [c], param_attr, input.dtype, False, init.Constant(1.0))
    bias = _param(prefix, "b", [c], bias_attr, input.dtype, True)
    mean = _param(prefix, "mean", [c], ParamAttr(name=moving_mean_name or f"{prefix}.w_1", trainable=False),
                  input.dtype, False, init.Constant(0.0))
    var = _param(prefix, "variance", [c], ParamAttr(name=moving_variance_name or f"{prefix}.w_2", trainable=False),
                 input.dtype, False, init.Constant(1.0))
    y = F.batch_norm(input, mean, var, scale, bias, training=not (is_test or use_global_stats), momentum=momentum,
                     epsilon=epsilon, data_format=data_layout)
    return _act(y, act)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    from ..nn import functional as F

    _program._check_static("static.nn.embedding")
    prefix = _program.unique_name("embedding")
    w = _param(prefix, "w", list(size), param_attr, dtype, False)
    return F.embedding(input, w, padding_idx=padding_idx)
