"""CNN layers of oar.nn (Paddle 3.x constructors, parameter names, shapes and default
initialization): convolutions, pooling, normalizations, dropout variants and the
activation layers. Attributes are stored under Paddle's names (_in_channels,
_kernel_size, _groups, ...) so summaries and FLOP counters can read them."""
import math
import numbers

from . import functional as F
from . import initializer as I
from .layer import Layer, ParamAttr

__all__ = [
    "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
    "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
    "AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveAvgPool3D",
    "AdaptiveMaxPool1D", "AdaptiveMaxPool2D", "AdaptiveMaxPool3D",
    "BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "LayerNorm", "GroupNorm",
    "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "RMSNorm", "LocalResponseNorm",
    "Dropout2D", "Dropout3D", "AlphaDropout",
    "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "Silu", "Swish", "Mish", "Softplus",
    "Softsign", "Hardswish", "Hardsigmoid", "Hardtanh", "Tanhshrink", "Softshrink",
    "Hardshrink", "ThresholdedReLU", "LogSigmoid", "PReLU", "GLU",
]


def _ntuple(v, n, name, cls):
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    v = [int(e) for e in v]
    if len(v) != n:
        raise ValueError(f"{cls}: {name} must be an int or {n} ints, got {v}")
    return v


# ---------------------------------------------------------------- convolution
class _ConvNd(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, transposed, dims, stride=1,
                 padding=0, padding_mode="zeros", output_padding=0, dilation=1, groups=1,
                 weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        cls = type(self).__name__
        if not isinstance(groups, numbers.Integral) or groups < 1:
            raise ValueError(f"{cls}: groups must be a positive int, got {groups}")
        if in_channels <= 0 or out_channels <= 0:
            raise ValueError(f"{cls}: in_channels and out_channels must be positive, got "
                             f"{in_channels}, {out_channels}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{cls}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{cls}: padding_mode must be 'zeros', 'reflect', 'replicate' or "
                             f"'circular', got '{padding_mode}'")
        if padding_mode != "zeros" and transposed:
            raise ValueError(f"{cls}: only padding_mode='zeros' is supported for transposed conv")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._transposed, self._dims = transposed, dims
        self._kernel_size = _ntuple(kernel_size, dims, "kernel_size", cls)
        self._stride = _ntuple(stride, dims, "stride", cls)
        self._dilation = _ntuple(dilation, dims, "dilation", cls)
        self._padding, self._padding_mode = padding, padding_mode
        self._output_padding = output_padding
        self._groups, self._data_format = groups, data_format
        self._channel_dim = 1 if data_format[1] == "C" else dims + 1
        if transposed:
            shape = [in_channels, out_channels // groups] + self._kernel_size
            default = None
        else:
            shape = [out_channels, in_channels // groups] + self._kernel_size
            fan_in = math.prod(self._kernel_size) * in_channels
            default = I.Normal(0.0, (2.0 / fan_in) ** 0.5)
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=default)
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def _pad_input(self, x):
        """Non-zero padding modes pad explicitly (through F.pad) before a VALID conv."""
        if self._padding_mode == "zeros":
            return x, self._padding
        if not hasattr(F, "pad"):
            raise NotImplementedError(f"{type(self).__name__}: padding_mode "
                                      f"'{self._padding_mode}' needs oar.nn.functional.pad")
        p = self._padding
        n = self._dims
        if isinstance(p, numbers.Integral):
            pads = [int(p)] * (2 * n)
        else:
            p = list(p)
            pads = [e for e in p for _ in range(2)] if len(p) == n else p
        # F.pad takes the last dim first: [left, right, top, bottom, ...]
        flat = []
        for i in reversed(range(n)):
            flat += [pads[2 * i], pads[2 * i + 1]]
        fmt = self._data_format
        return F.pad(x, flat, mode=self._padding_mode, data_format=fmt), 0

    def extra_repr(self):
        s = f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"
        if self._stride != [1] * self._dims:
            s += f", stride={self._stride}"
        if self._padding != 0:
            s += f", padding={self._padding}"
        if self._dilation != [1] * self._dims:
            s += f", dilation={self._dilation}"
        if self._groups != 1:
            s += f", groups={self._groups}"
        return s + f", data_format={self._data_format}"


class Conv1D(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, False, 1, stride, padding,
                         padding_mode, 0, dilation, groups, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, padding = self._pad_input(x)
        return F.conv1d(x, self.weight, self.bias, self._stride, padding, self._dilation,
                        self._groups, self._data_format)


class Conv2D(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, False, 2, stride, padding,
                         padding_mode, 0, dilation, groups, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, padding = self._pad_input(x)
        return F.conv2d(x, self.weight, self.bias, self._stride, padding, self._dilation,
                        self._groups, self._data_format)


class Conv3D(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, False, 3, stride, padding,
                         padding_mode, 0, dilation, groups, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, padding = self._pad_input(x)
        return F.conv3d(x, self.weight, self.bias, self._stride, padding, self._dilation,
                        self._groups, self._data_format)


class Conv1DTranspose(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, True, 1, stride, padding,
                         "zeros", output_padding, dilation, groups, weight_attr, bias_attr,
                         data_format)

    def forward(self, x, output_size=None):
        return F.conv1d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                  self._output_padding if output_size is None else 0,
                                  self._groups, self._dilation, output_size, self._data_format)


class Conv2DTranspose(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, True, 2, stride, padding,
                         "zeros", output_padding, dilation, groups, weight_attr, bias_attr,
                         data_format)

    def forward(self, x, output_size=None):
        return F.conv2d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                  self._output_padding if output_size is None else 0,
                                  groups=self._groups, dilation=self._dilation,
                                  output_size=output_size, data_format=self._data_format)


class Conv3DTranspose(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, True, 3, stride, padding,
                         "zeros", output_padding, dilation, groups, weight_attr, bias_attr,
                         data_format)

    def forward(self, x, output_size=None):
        return F.conv3d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                  self._output_padding if output_size is None else 0,
                                  self._groups, self._dilation, output_size, self._data_format)


# ---------------------------------------------------------------- pooling
class _Pool(Layer):
    _fn = None

    def __init__(self, **kwargs):
        super().__init__()
        self._kwargs = kwargs
        for k, v in kwargs.items():
            setattr(self, k if k.startswith("_") else "_" + k, v)

    def forward(self, x):
        return type(self)._fn(x, **self._kwargs)

    def extra_repr(self):
        # Paddle's Max/AvgPool layers print their window only
        keys = ("kernel_size", "stride", "padding") if "kernel_size" in self._kwargs else self._kwargs
        return ", ".join(f"{k}={self._kwargs[k]}" for k in keys)


def _init_signature(params):
    """The inspect.Signature of a generated constructor (self, *params, name=None), so
    help() and inspect show Paddle's argument names and order."""
    import inspect
    P = inspect.Parameter
    ps = [P("self", P.POSITIONAL_OR_KEYWORD)]
    ps += [P(p, P.POSITIONAL_OR_KEYWORD) if d is _REQUIRED else
           P(p, P.POSITIONAL_OR_KEYWORD, default=d) for p, d in params]
    return inspect.Signature(ps + [P("name", P.POSITIONAL_OR_KEYWORD, default=None)])


def _pool_layer(name, fn, params):
    """A pooling layer class whose constructor takes `params` [(name, default), ...]
    (Paddle's order) and calls fn(x, **params)."""
    def __init__(self, *args, **kwargs):
        kwargs.pop("name", None)
        if len(args) > len(params):
            raise TypeError(f"{name}() takes at most {len(params)} positional arguments")
        values = {}
        for i, (p, default) in enumerate(params):
            if i < len(args):
                values[p] = args[i]
            elif p in kwargs:
                values[p] = kwargs.pop(p)
            elif default is _REQUIRED:
                raise TypeError(f"{name}() missing required argument '{p}'")
            else:
                values[p] = default
        if kwargs:
            raise TypeError(f"{name}() got unexpected arguments {sorted(kwargs)}")
        _Pool.__init__(self, **values)
    __init__.__signature__ = _init_signature(params)
    return type(name, (_Pool,), {"__init__": __init__, "_fn": staticmethod(fn)})


_REQUIRED = object()
_MAXP = [("kernel_size", _REQUIRED), ("stride", None), ("padding", 0), ("return_mask", False),
         ("ceil_mode", False)]
MaxPool1D = _pool_layer("MaxPool1D", F.max_pool1d, _MAXP)
MaxPool2D = _pool_layer("MaxPool2D", F.max_pool2d, _MAXP + [("data_format", "NCHW")])
MaxPool3D = _pool_layer("MaxPool3D", F.max_pool3d, _MAXP + [("data_format", "NCDHW")])
AvgPool1D = _pool_layer("AvgPool1D", F.avg_pool1d, [
    ("kernel_size", _REQUIRED), ("stride", None), ("padding", 0), ("exclusive", True),
    ("ceil_mode", False)])
_AVGP = [("kernel_size", _REQUIRED), ("stride", None), ("padding", 0), ("ceil_mode", False),
         ("exclusive", True), ("divisor_override", None)]
AvgPool2D = _pool_layer("AvgPool2D", F.avg_pool2d, _AVGP + [("data_format", "NCHW")])
AvgPool3D = _pool_layer("AvgPool3D", F.avg_pool3d, _AVGP + [("data_format", "NCDHW")])
AdaptiveAvgPool1D = _pool_layer("AdaptiveAvgPool1D", F.adaptive_avg_pool1d,
                                [("output_size", _REQUIRED)])
AdaptiveAvgPool2D = _pool_layer("AdaptiveAvgPool2D", F.adaptive_avg_pool2d,
                                [("output_size", _REQUIRED), ("data_format", "NCHW")])
AdaptiveAvgPool3D = _pool_layer("AdaptiveAvgPool3D", F.adaptive_avg_pool3d,
                                [("output_size", _REQUIRED), ("data_format", "NCDHW")])
AdaptiveMaxPool1D = _pool_layer("AdaptiveMaxPool1D", F.adaptive_max_pool1d,
                                [("output_size", _REQUIRED), ("return_mask", False)])
AdaptiveMaxPool2D = _pool_layer("AdaptiveMaxPool2D", F.adaptive_max_pool2d,
                                [("output_size", _REQUIRED), ("return_mask", False)])
AdaptiveMaxPool3D = _pool_layer("AdaptiveMaxPool3D", F.adaptive_max_pool3d,
                                [("output_size", _REQUIRED), ("return_mask", False)])


# ---------------------------------------------------------------- normalization
class _BatchNormBase(Layer):
    _formats = ("NCHW", "NHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", use_global_stats=None, name=None):
        super().__init__()
        cls = type(self).__name__
        if data_format not in self._formats:
            raise ValueError(f"{cls}: data_format must be one of {self._formats}, got "
                             f"'{data_format}'")
        self._num_features, self._momentum, self._epsilon = num_features, momentum, epsilon
        self._data_format, self._use_global_stats = data_format, use_global_stats
        self._weight_attr, self._bias_attr = weight_attr, bias_attr
        if weight_attr is False:
            self.weight = None
        else:
            self.weight = self.create_parameter([num_features], attr=weight_attr,
                                                default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)
        self._mean = self.create_parameter([num_features], attr=ParamAttr(trainable=False),
                                           default_initializer=I.Constant(0.0))
        self._variance = self.create_parameter([num_features], attr=ParamAttr(trainable=False),
                                               default_initializer=I.Constant(1.0))

    def _check_input(self, x):
        pass

    def forward(self, x):
        self._check_input(x)
        return F.batch_norm(x, self._mean, self._variance, self.weight, self.bias,
                            training=self.training, momentum=self._momentum,
                            epsilon=self._epsilon, data_format=self._data_format,
                            use_global_stats=self._use_global_stats)

    def extra_repr(self):
        return (f"num_features={self._num_features}, momentum={self._momentum}, "
                f"epsilon={self._epsilon}, data_format={self._data_format}")


class BatchNorm1D(_BatchNormBase):
    _formats = ("NC", "NCL", "NLC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)

    def _check_input(self, x):
        if len(x.shape) not in (2, 3):
            raise ValueError(f"BatchNorm1D: expected a 2-D or 3-D input, got shape {list(x.shape)}")


class BatchNorm2D(_BatchNormBase):
    def _check_input(self, x):
        if len(x.shape) != 4:
            raise ValueError(f"BatchNorm2D: expected a 4-D input, got shape {list(x.shape)}")


class BatchNorm3D(_BatchNormBase):
    _formats = ("NCDHW", "NDHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)

    def _check_input(self, x):
        if len(x.shape) != 5:
            raise ValueError(f"BatchNorm3D: expected a 5-D input, got shape {list(x.shape)}")


class BatchNorm(_BatchNormBase):
    """Paddle's legacy paddle.nn.BatchNorm (any rank 2-5, optional activation)."""
    _formats = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05,
                 param_attr=None, bias_attr=None, dtype="float32", data_layout="NCHW",
                 in_place=False, moving_mean_name=None, moving_variance_name=None,
                 do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout,
                         use_global_stats)
        self._act, self._is_test = act, is_test

    def forward(self, x):
        fmt = self._data_format
        if len(x.shape) == 2:
            fmt = "NC"
        out = F.batch_norm(x, self._mean, self._variance, self.weight, self.bias,
                           training=self.training and not self._is_test, momentum=self._momentum,
                           epsilon=self._epsilon, data_format=fmt,
                           use_global_stats=self._use_global_stats or None)
        return getattr(F, self._act)(out) if self._act else out


class LayerNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 name=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = [normalized_shape]
        self._normalized_shape = list(normalized_shape)
        self._epsilon = epsilon
        self._weight_attr, self._bias_attr = weight_attr, bias_attr
        shape = [math.prod(self._normalized_shape)]
        self.weight = None if weight_attr is False else self.create_parameter(
            shape, attr=weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter(shape, attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self):
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class GroupNorm(Layer):
    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self._num_groups, self._num_channels, self._epsilon = num_groups, num_channels, epsilon
        self._data_format = data_format
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_channels], attr=weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter([num_channels], attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias,
                            self._data_format)

    def extra_repr(self):
        return (f"num_groups={self._num_groups}, num_channels={self._num_channels}, "
                f"epsilon={self._epsilon}")


class _InstanceNormBase(Layer):
    _rank = 4

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format="NCHW", name=None):
        super().__init__()
        self._num_features, self._epsilon, self._momentum = num_features, epsilon, momentum
        self._data_format = data_format
        if weight_attr is False or bias_attr is False:
            self.scale, self.bias = None, None
        else:
            self.scale = self.create_parameter([num_features], attr=weight_attr,
                                               default_initializer=I.Constant(1.0))
            self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)

    def forward(self, x):
        if len(x.shape) != self._rank:
            raise ValueError(f"{type(self).__name__}: expected a {self._rank}-D input, got shape "
                             f"{list(x.shape)}")
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon,
                               data_format=self._data_format)

    def extra_repr(self):
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNormBase):
    _rank = 3

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format="NCL", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class InstanceNorm2D(_InstanceNormBase):
    _rank = 4


class InstanceNorm3D(_InstanceNormBase):
    _rank = 5

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format="NCDHW", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class RMSNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-06, weight_attr=None, name=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = [normalized_shape]
        self._normalized_shape, self._epsilon = list(normalized_shape), epsilon
        self.weight = None if weight_attr is False else self.create_parameter(
            self._normalized_shape, attr=weight_attr, default_initializer=I.Constant(1.0))

    def forward(self, x):
        return F.rms_norm(x, self._normalized_shape, self.weight, self._epsilon)


class LocalResponseNorm(Layer):
    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = size, alpha, beta, k, data_format

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)


# ---------------------------------------------------------------- dropout
class Dropout2D(Layer):
    def __init__(self, p=0.5, data_format="NCHW", name=None):
        super().__init__()
        self.p, self.data_format = p, data_format

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.data_format)

    def extra_repr(self):
        return f"p={self.p}, data_format={self.data_format}"


class Dropout3D(Dropout2D):
    def __init__(self, p=0.5, data_format="NCDHW", name=None):
        super().__init__(p, data_format)

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.data_format)


class AlphaDropout(Layer):
    def __init__(self, p=0.5, name=None):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


# ---------------------------------------------------------------- activations
def _bind_args(name, params, args, kwargs):
    """Constructor arguments of a generated layer: `params` [(name, default)] bound from
    positional and keyword arguments (Paddle's `name=` is dropped)."""
    kwargs.pop("name", None)
    values = dict(params)
    for (p, _), a in zip(params, args):
        values[p] = a
    for k, v in kwargs.items():
        if k not in values:
            raise TypeError(f"{name}() got an unexpected argument '{k}'")
        values[k] = v
    return values


def _act_layer(name, fn, params=()):
    """An activation layer: constructor arguments `params` [(name, default)] are passed
    to fn by keyword."""
    def __init__(self, *args, **kwargs):
        Layer.__init__(self)
        self._act_args = _bind_args(name, params, args, kwargs)

    def forward(self, x):
        return fn(x, **self._act_args)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._act_args.items())
    __init__.__signature__ = _init_signature(params)
    return type(name, (Layer,), {"__init__": __init__, "forward": forward,
                                 "extra_repr": extra_repr})


ReLU6 = _act_layer("ReLU6", F.relu6)
LeakyReLU = _act_layer("LeakyReLU", F.leaky_relu, [("negative_slope", 0.01)])
ELU = _act_layer("ELU", F.elu, [("alpha", 1.0)])
SELU = _act_layer("SELU", F.selu, [("scale", 1.0507009873554804934193349852946),
                                   ("alpha", 1.6732632423543772848170429916717)])
CELU = _act_layer("CELU", F.celu, [("alpha", 1.0)])
Silu = _act_layer("Silu", F.silu, [("inplace", False)])
Swish = _act_layer("Swish", F.swish)
Mish = _act_layer("Mish", F.mish)
Softplus = _act_layer("Softplus", F.softplus, [("beta", 1), ("threshold", 20)])
Softsign = _act_layer("Softsign", F.softsign)
Hardswish = _act_layer("Hardswish", F.hardswish)
Hardsigmoid = _act_layer("Hardsigmoid", F.hardsigmoid)
Hardtanh = _act_layer("Hardtanh", F.hardtanh, [("min", -1.0), ("max", 1.0)])
Tanhshrink = _act_layer("Tanhshrink", F.tanhshrink)
Softshrink = _act_layer("Softshrink", F.softshrink, [("threshold", 0.5)])
Hardshrink = _act_layer("Hardshrink", F.hardshrink, [("threshold", 0.5)])
ThresholdedReLU = _act_layer("ThresholdedReLU", F.thresholded_relu,
                             [("threshold", 1.0), ("value", 0.0)])
LogSigmoid = _act_layer("LogSigmoid", F.log_sigmoid)
GLU = _act_layer("GLU", F.glu, [("axis", -1)])


class PReLU(Layer):
    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW",
                 name=None):
        super().__init__()
        self._num_parameters, self._init, self._data_format = num_parameters, init, data_format
        self._weight_attr = weight_attr
        self.weight = self.create_parameter([num_parameters], attr=weight_attr,
                                            default_initializer=I.Constant(init))

    def forward(self, x):
        return F.prelu(x, self.weight, self._data_format)

    def extra_repr(self):
        return f"num_parameters={self._num_parameters}, data_format={self._data_format}, init={self._init}"
