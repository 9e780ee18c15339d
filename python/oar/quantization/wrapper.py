"""ObserveWrapper: a layer whose input (or output) passes through an observer/quanter."""
from ..nn.layer import Layer


class ObserveWrapper(Layer):
    def __init__(self, observer, observed, observe_input=True):
        super().__init__()
        self._observer = observer
        self._observed = observed
        self._observe_input = observe_input

    def forward(self, *inputs, **kwargs):
        if self._observe_input:
            return self._observed(self._observer(*inputs), **kwargs)
        return self._observer(self._observed(*inputs, **kwargs))
