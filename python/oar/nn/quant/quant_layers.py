"""Paddle's dygraph fake-quantization layers: quantize-dequantize by abs max (per tensor,
per channel, or by a moving average of it), the observing MovingAverageAbsMaxScale
(QuantStub), and Conv2D / Conv2DTranspose / Linear with fake-quantized input and weight.
The quantize-dequantize is round(x / scale * r) * scale / r with r = 2**(bits - 1) - 1;
its gradient passes straight through (oar.quantization.base_quanter.fake_quant_dequant)."""
import numbers

from ..layer import Layer

__all__ = ["FakeQuantAbsMax", "FakeQuantMovingAverageAbsMax", "FakeQuantChannelWiseAbsMax",
           "MovingAverageAbsMaxScale", "QuantStub", "QuantizedConv2D",
           "QuantizedConv2DTranspose", "QuantizedLinear"]


def _check_bits(bits, op, arg="quant_bits"):
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or not 2 <= bits <= 16:
        raise ValueError(f"{op}: {arg} must be an int in [2, 16], got {bits!r}")
    return int(bits)


def _check_rate(rate, op):
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
        raise ValueError(f"{op}: moving_rate must be in [0, 1), got {rate!r}")
    return float(rate)


def _float_dtype(dtype, op):
    from ..._dtype import convert_dtype
    try:
        d = convert_dtype(dtype)
    except (TypeError, ValueError, KeyError):
        d = None
    if d is None or not d.is_floating_point:
        raise TypeError(f"{op}: dtype must be a float dtype, got {dtype!r}")
    return d.name


def _update_moving_scale(layer, x):
    """Paddle's moving-average abs-max: state = r * state + 1, accum = r * accum + max|x|,
    scale = accum / state (the layer's _state/_accum/_scale buffers)."""
    r = layer._moving_rate
    cur = _abs_max(x).astype(layer._scale.dtype).reshape([1])
    layer._state.set_value(layer._state * r + 1)
    layer._accum.set_value(layer._accum * r + cur)
    layer._scale.set_value(layer._accum / layer._state)


def _check_input(x, op):
    from ..._C import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: input must be a float tensor, got {x.dtype.name}")


def _abs_max(x, axis=None):
    from ..._creation import _full_on
    a = x.detach().abs()
    if axis is None:
        return a.max() if a.size else _full_on(a.place, [], 0.0, a.dtype)
    dims = [d for d in range(x.ndim) if d != axis]
    return a.max(axis=dims) if dims else a


def _qdq(x, scale, bits):
    from ...quantization.base_quanter import fake_quant_dequant
    return fake_quant_dequant(x, scale, bits)


class FakeQuantAbsMax(Layer):
    """Quantize-dequantize with scale = max|x| of this input."""

    def __init__(self, name=None, quant_bits=8, dtype="float32", quant_on_weight=False,
                 reduce_type=None):
        super().__init__()
        self._quant_bits = _check_bits(quant_bits, "FakeQuantAbsMax")
        self._name, self._reduce_type = name, reduce_type
        self._scale = None
        dtype = _float_dtype(dtype, "FakeQuantAbsMax")
        if quant_on_weight:  # the last scale is kept (Paddle's parameter, trainable=False)
            from .. import initializer as I
            from ..layer import ParamAttr
            self._scale = self.create_parameter([1], ParamAttr(initializer=I.Constant(0.001),
                                                               trainable=False), dtype)
            self._scale.stop_gradient = True

    def forward(self, input):  # noqa: A002
        _check_input(input, "FakeQuantAbsMax")
        scale = _abs_max(input)
        if self._scale is not None:
            self._scale.set_value(scale.reshape([1]).astype(self._scale.dtype))
        return _qdq(input, scale, self._quant_bits)


class FakeQuantMovingAverageAbsMax(Layer):
    """Quantize-dequantize with a moving average of max|x|: while training, state = rate *
    state + 1, accum = rate * accum + max|x|, scale = accum / state (state and accum start
    at 1, the scale at 0.001); in eval mode the last scale."""

    def __init__(self, name=None, moving_rate=0.9, quant_bits=8, dtype="float32",
                 reduce_type=None):
        super().__init__()
        import oar
        op = "FakeQuantMovingAverageAbsMax"
        self._moving_rate = _check_rate(moving_rate, op)
        self._quant_bits = _check_bits(quant_bits, op)
        self._name, self._reduce_type = name, reduce_type
        dtype = _float_dtype(dtype, op)
        self.register_buffer("_scale", oar.full([1], 0.001, dtype))
        self.register_buffer("_state", oar.full([1], 1.0, dtype))
        self.register_buffer("_accum", oar.full([1], 1.0, dtype))

    def forward(self, input):  # noqa: A002
        _check_input(input, "FakeQuantMovingAverageAbsMax")
        if self.training:
            _update_moving_scale(self, input)
        return _qdq(input, self._scale.reshape([]), self._quant_bits)


class FakeQuantChannelWiseAbsMax(Layer):
    """Quantize-dequantize with one scale per channel along quant_axis: max|x| over the
    other dimensions."""

    def __init__(self, name=None, channel_num=None, quant_bits=8, quant_axis=0,
                 dtype="float32", quant_on_weight=False, reduce_type=None):
        super().__init__()
        op = "FakeQuantChannelWiseAbsMax"
        if isinstance(channel_num, bool) or not isinstance(channel_num, numbers.Integral) or \
                channel_num <= 0:
            raise ValueError(f"{op}: channel_num must be a positive int, got {channel_num!r}")
        if quant_axis not in (0, 1):
            raise ValueError(f"{op}: quant_axis must be 0 or 1, got {quant_axis!r}")
        self._quant_bits = _check_bits(quant_bits, op)
        self._channel_num, self._quant_axis = int(channel_num), quant_axis
        self._name, self._reduce_type = name, reduce_type

    def forward(self, input):  # noqa: A002
        _check_input(input, "FakeQuantChannelWiseAbsMax")
        if input.ndim <= self._quant_axis or input.shape[self._quant_axis] != self._channel_num:
            raise ValueError(f"FakeQuantChannelWiseAbsMax: input must have {self._channel_num} "
                             f"channels on axis {self._quant_axis}, got shape "
                             f"{list(input.shape)}")
        scale = _abs_max(input, self._quant_axis)
        shape = [1] * input.ndim
        shape[self._quant_axis] = self._channel_num
        return _qdq(input, scale.reshape(shape), self._quant_bits)


class MovingAverageAbsMaxScale(Layer):
    """Records a moving average of max|x| (as FakeQuantMovingAverageAbsMax, state and
    accum from 0) while training and returns its input unchanged."""

    def __init__(self, name=None, moving_rate=0.9, dtype="float32", reduce_type=None):
        super().__init__()
        import oar
        self._moving_rate = _check_rate(moving_rate, "MovingAverageAbsMaxScale")
        self._name, self._reduce_type = name, reduce_type
        dtype = _float_dtype(dtype, "MovingAverageAbsMaxScale")
        self.register_buffer("_scale", oar.zeros([1], dtype))
        self.register_buffer("_state", oar.zeros([1], dtype))
        self.register_buffer("_accum", oar.zeros([1], dtype))

    def forward(self, input):  # noqa: A002
        _check_input(input, "MovingAverageAbsMaxScale")
        if self.training:
            _update_moving_scale(self, input)
        return input


QuantStub = MovingAverageAbsMaxScale


def _fake_quant(kind, op, name, bits, rate, dtype, on_weight, channels=None, axis=0):
    if kind == "abs_max":
        return FakeQuantAbsMax(name, bits, dtype, on_weight)
    if kind == "moving_average_abs_max":
        return FakeQuantMovingAverageAbsMax(name, rate, bits, dtype)
    if kind == "channel_wise_abs_max":
        return FakeQuantChannelWiseAbsMax(name, channels, bits, axis, dtype, on_weight)
    raise ValueError(f"{op}: quantize type must be 'abs_max', 'moving_average_abs_max' or "
                     f"'channel_wise_abs_max', got {kind!r}")


class _Quantized(Layer):
    _axis = 0  # the weight's output-channel axis (channel-wise weight quantization)

    def __init__(self, layer, weight_bits=8, activation_bits=8, moving_rate=0.9,
                 weight_quantize_type="abs_max", activation_quantize_type="abs_max",
                 weight_pre_layer=None, act_pre_layer=None, weight_quant_layer=None,
                 act_quant_layer=None):
        super().__init__()
        op = type(self).__name__
        if not isinstance(layer, self._wraps()):
            raise TypeError(f"{op}: layer must be an oar.nn.{self._wraps().__name__}, got "
                            f"{type(layer).__name__}")
        _check_bits(weight_bits, op, "weight_bits")
        _check_bits(activation_bits, op, "activation_bits")
        if activation_quantize_type == "channel_wise_abs_max":
            raise ValueError(f"{op}: activation_quantize_type cannot be 'channel_wise_abs_max'")
        self._layer_attrs(layer)
        self.weight, self.bias = layer.weight, layer.bias
        self._fake_quant_weight = weight_quant_layer() if weight_quant_layer else _fake_quant(
            weight_quantize_type, op, self.weight.name, weight_bits, moving_rate, self._dtype,
            True, self.weight.shape[self._axis], self._axis)
        self._fake_quant_input = act_quant_layer() if act_quant_layer else _fake_quant(
            activation_quantize_type, op, layer.full_name(), activation_bits, moving_rate,
            self._dtype, False)
        self._act_preprocess = act_pre_layer() if act_pre_layer else None
        self._weight_preprocess = weight_pre_layer() if weight_pre_layer else None

    def _layer_attrs(self, layer):
        pass

    def _quantized(self, input):  # noqa: A002
        if self._act_preprocess is not None:
            input = self._act_preprocess(input)
        weight = self.weight
        if self._weight_preprocess is not None:
            weight = self._weight_preprocess(weight)
        return self._fake_quant_input(input), self._fake_quant_weight(weight)


class QuantizedConv2D(_Quantized):
    """Conv2D (its stride, padding, dilation, groups, data format) on the fake-quantized
    input and weight."""

    @staticmethod
    def _wraps():
        from ..layer_cnn import Conv2D
        return Conv2D

    def _layer_attrs(self, layer):
        # the Conv2D itself for its attributes and padding modes; not a sublayer (its weight
        # is this layer's)
        object.__setattr__(self, "_conv", layer)

    def forward(self, input):  # noqa: A002
        from .. import functional as F
        x, w = self._quantized(input)
        c = self._conv
        x, padding = c._pad_input(x)
        return F.conv2d(x, w, self.bias, c._stride, padding, c._dilation, c._groups,
                        c._data_format)


class QuantizedConv2DTranspose(_Quantized):
    """Conv2DTranspose on the fake-quantized input and weight (channel-wise weight scales on
    axis 1, its output channels)."""
    _axis = 1

    @staticmethod
    def _wraps():
        from ..layer_cnn import Conv2DTranspose
        return Conv2DTranspose

    def _layer_attrs(self, layer):
        self._stride, self._padding = layer._stride, layer._padding
        self._output_padding, self._dilation = layer._output_padding, layer._dilation
        self._groups, self._data_format = layer._groups, layer._data_format

    def forward(self, input, output_size=None):  # noqa: A002
        from .. import functional as F
        x, w = self._quantized(input)
        return F.conv2d_transpose(
            x, w, self.bias, self._stride, self._padding,
            output_padding=self._output_padding if output_size is None else 0,
            dilation=self._dilation, groups=self._groups, output_size=output_size,
            data_format=self._data_format)


class QuantizedLinear(_Quantized):
    """Linear on the fake-quantized input and weight (channel-wise weight scales on axis 1,
    its output features)."""
    _axis = 1

    @staticmethod
    def _wraps():
        from ..layer_common import Linear
        return Linear

    def forward(self, input):  # noqa: A002
        from .. import functional as F
        x, w = self._quantized(input)
        return F.linear(x, w, self.bias)
