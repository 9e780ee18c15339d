"""AbsmaxObserver: the scale is the largest |value| seen."""
from ..base_quanter import BaseObserver
from ..factory import quanter


@quanter("AbsmaxObserver")
class AbsmaxObserverLayer(BaseObserver):
    """Records max |x| over every batch it sees; returns x unchanged."""

    def __init__(self, layer, quant_bits=8):
        super().__init__()
        if isinstance(quant_bits, bool) or not isinstance(quant_bits, int) or not 1 < quant_bits <= 16:
            raise ValueError(f"AbsmaxObserver: quant_bits must be an int in [2, 16], got {quant_bits!r}")
        self._quant_bits = quant_bits
        self._abs_max = None

    def forward(self, input):  # noqa: A002
        import oar
        from ..._creation import _full_on

        with oar.no_grad():
            m = oar.max(oar.abs(input)).astype("float32") if input.size else _full_on(input.place, [], 0.0, "float32")
            self._abs_max = m if self._abs_max is None else oar.maximum(self._abs_max, m)
        return input

    def cal_thresholds(self):
        return self._abs_max

    def min_value(self):
        return 0.0

    def max_value(self):
        return self._abs_max

    def bit_length(self):
        return self._quant_bits

    def quant_axis(self):
        return -1

    def scales(self):
        return self._abs_max

    def zero_points(self):
        return None
