"""BaseQuanter / BaseObserver: the layers that quantize (or observe) one tensor, and the
fake quantize-dequantize they share."""
from ..nn.layer import Layer


class BaseQuanter(Layer):
    """A layer that simulates quantization of its input (forward) and reports the
    quantization parameters (scales, zero_points, bit_length, quant_axis)."""

    def forward(self, input):  # noqa: A002
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def scales(self):
        raise NotImplementedError(f"{type(self).__name__} must define scales")

    def zero_points(self):
        raise NotImplementedError(f"{type(self).__name__} must define zero_points")

    def quant_axis(self):
        return -1

    def bit_length(self):
        return 8


class BaseObserver(BaseQuanter):
    """A quanter for post-training quantization: it records statistics of its input and
    returns the input unchanged; cal_thresholds() computes the scales from them."""

    def cal_thresholds(self):
        raise NotImplementedError(f"{type(self).__name__} must define cal_thresholds")


def fake_quant_dequant(x, scale, bit_length):
    """x rounded onto the symmetric integer grid of `scale` (the abs max it maps to
    2**(bit_length-1) - 1) and back; the gradient passes straight through."""
    import oar

    bound = float(2 ** (bit_length - 1) - 1)
    s = oar.clip(scale.astype(x.dtype), min=1e-9)
    q = oar.round(oar.clip(x / s * bound, -bound, bound)) * s / bound
    return x + (q - x).detach()
