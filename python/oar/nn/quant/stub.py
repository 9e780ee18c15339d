"""Stub: an identity layer that marks where QAT/PTQ insert an observer of its input."""
from ..layer import Layer

__all__ = ["Stub"]


class Stub(Layer):
    """Identity until quantized: QAT/PTQ.quantize replace it with a QuanterStub holding an
    instance of `observer` (a quanter/observer factory), or of the config's activation
    quanter when observer is None. It lets a functional call inside forward be quantized."""

    def __init__(self, observer=None):
        super().__init__()
        from ...quantization.factory import QuanterFactory
        if observer is not None and not isinstance(observer, QuanterFactory):
            raise TypeError(f"Stub: observer must be a quanter or observer factory (e.g. "
                            f"FakeQuanterWithAbsMaxObserver(...)) or None, got "
                            f"{type(observer).__name__}")
        self._observer = observer

    def forward(self, input):  # noqa: A002
        return input


class QuanterStub(Layer):
    """What quantize() puts in place of a Stub: its input through the observer."""

    def __init__(self, layer, q_config):
        super().__init__()
        self._observer = None
        if layer._observer is not None:
            self._observer = layer._observer._instance(layer)
        elif q_config is not None and q_config.activation is not None:
            self._observer = q_config.activation._instance(layer)

    def forward(self, input):  # noqa: A002
        return input if self._observer is None else self._observer(input)
