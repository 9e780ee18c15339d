"""The quantized forms of Linear and Conv2D that quantize() swaps in: the input through
the activation quanter, the weight through the weight quanter, then the layer's op."""
from ..nn.layer import Layer


def _quanter(factory, layer):
    return None if factory is None else factory._instance(layer)


class _Quanted(Layer):
    def __init__(self, layer, q_config):
        super().__init__()
        self.weight = layer.weight
        self.bias = layer.bias
        self.weight_quanter = _quanter(q_config.weight if q_config else None, layer)
        self.activation_quanter = _quanter(q_config.activation if q_config else None, layer)

    def _quantized(self, x):
        w = self.weight if self.weight_quanter is None else self.weight_quanter(self.weight)
        x = x if self.activation_quanter is None else self.activation_quanter(x)
        return x, w


class QuantedLinear(_Quanted):
    """Linear with quantized input and weight."""

    def forward(self, input):  # noqa: A002
        from ..nn import functional as F

        x, w = self._quantized(input)
        return F.linear(x, w, self.bias)


class QuantedConv2D(_Quanted):
    """Conv2D with quantized input and weight (its stride, padding, dilation, groups,
    padding mode and data format)."""

    _ATTRS = ("_in_channels", "_out_channels", "_dims", "_kernel_size", "_stride", "_dilation", "_padding",
              "_padding_mode", "_groups", "_data_format", "_channel_dim")

    def __init__(self, layer, q_config):
        super().__init__(layer, q_config)
        for a in self._ATTRS:
            setattr(self, a, getattr(layer, a))

    def forward(self, input):  # noqa: A002
        from ..nn import Conv2D
        from ..nn import functional as F

        x, padding = Conv2D._pad_input(self, input)
        x, w = self._quantized(x)
        return F.conv2d(x, w, self.bias, self._stride, padding, self._dilation, self._groups, self._data_format)


class LinearQuanterDequanter(Layer):
    """What convert() leaves of a quanter: a fixed quantize-dequantize with its scale."""

    def __init__(self, scale, bit_length):
        super().__init__()
        self.register_buffer("_scale", scale)
        self._bit_length = bit_length

    def forward(self, input):  # noqa: A002
        from .base_quanter import fake_quant_dequant

        return fake_quant_dequant(input, self._scale, self._bit_length)
