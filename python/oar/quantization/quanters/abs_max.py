"""FakeQuanterWithAbsMaxObserver: quantize-dequantize with a moving average of max |x|."""
from ..base_quanter import BaseQuanter, fake_quant_dequant
from ..factory import quanter


@quanter("FakeQuanterWithAbsMaxObserver")
class FakeQuanterWithAbsMaxObserverLayer(BaseQuanter):
    """In training, the scale is accum / state with accum = rate * accum + max|x| and
    state = rate * state + 1 per batch; in eval, the last scale. The output is x quantized
    to bit_length bits and dequantized (gradient: straight through)."""

    def __init__(self, layer, name=None, moving_rate=0.9, bit_length=8, dtype="float32"):
        super().__init__()
        import oar

        if not isinstance(moving_rate, (int, float)) or isinstance(moving_rate, bool) or not 0 <= moving_rate < 1:
            raise ValueError(f"FakeQuanterWithAbsMaxObserver: moving_rate must be in [0, 1), got {moving_rate!r}")
        if isinstance(bit_length, bool) or not isinstance(bit_length, int) or not 1 < bit_length <= 16:
            raise ValueError(f"FakeQuanterWithAbsMaxObserver: bit_length must be an int in [2, 16], got "
                             f"{bit_length!r}")
        self._moving_rate, self._bit_length = float(moving_rate), bit_length
        self.register_buffer("_scale", oar.full([], 1e-3, dtype))
        self.register_buffer("_state", oar.zeros([], dtype))
        self._accum = oar.zeros([], dtype)

    def forward(self, input):  # noqa: A002
        import oar

        if self.training:
            with oar.no_grad():
                m = oar.max(oar.abs(input)).astype(self._scale.dtype) if input.size else self._scale * 0
                r = self._moving_rate
                self._state = r * self._state + 1
                self._accum = r * self._accum + m
                self._scale = self._accum / self._state
        return fake_quant_dequant(input, self._scale, self._bit_length)

    def bit_length(self):
        return self._bit_length

    def quant_axis(self):
        return -1

    def scales(self):
        return self._scale

    def zero_points(self):
        return None
