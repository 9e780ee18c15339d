"""Categorical distribution."""
import numpy as np

import oar
import oar.nn.functional as F
from oar._creation import _full_on
from .distribution import Distribution, _dtype_name, sample_shape, to_params


class Categorical(Distribution):
    """Categorical(logits): a category index in 0 .. K-1 (K the size of the last axis).

    Paddle's semantics, kept for compatibility: sample, entropy and kl_divergence treat
    `logits` as logits (probabilities softmax(logits)), while probs(value) and
    log_prob(value) normalize `logits` by its sum (probabilities logits / sum(logits)),
    which agree only when the input holds non-negative weights and is read as such.
    See Note [Distributions]."""

    def __init__(self, logits, name=None):
        self.name = name or "Categorical"
        (self.logits,) = to_params("Categorical", logits=logits)
        if self.logits.ndim < 1:
            raise ValueError("Categorical: argument 'logits' must be at least 1-D, got a 0-D "
                             "tensor")
        self._dtype = _dtype_name(self.logits.dtype)
        self._prob = self.logits / self.logits.sum(-1, keepdim=True)
        super().__init__(tuple(self.logits.shape[:-1]))

    def _log_softmax(self):
        return F.log_softmax(self.logits, axis=-1)

    def sample(self, shape=()):
        """int64 category indices of shape `shape + batch_shape`, drawn with probabilities
        softmax(logits)."""
        shape = sample_shape("Categorical", shape)
        num = int(np.prod(shape)) if shape else 1
        k = self.logits.shape[-1]
        with oar.no_grad():
            p = F.softmax(self.logits.detach(), axis=-1).reshape([-1, k])
            if num == 0 or p.shape[0] == 0:
                return _full_on(self.logits.place, list(shape) + list(self._batch_shape), 0, "int64")
            idx = oar.multinomial(p, num, True)  # [batch, num]
            return idx.transpose([1, 0]).reshape(list(shape) + list(self._batch_shape))

    def entropy(self):
        logp = self._log_softmax()
        return -(logp.exp() * logp).sum(-1)

    def kl_divergence(self, other):
        """KL(self || other) over softmax(logits), summed over the last axis with keepdim
        (Paddle's output shape)."""
        if not isinstance(other, Categorical):
            raise TypeError(f"Categorical.kl_divergence: argument 'other' must be a "
                            f"Categorical, got {type(other).__name__}")
        logp, logq = self._log_softmax(), other._log_softmax()
        return (logp.exp() * (logp - logq)).sum(-1, keepdim=True)

    def probs(self, value):
        """The probability (logits / sum(logits)) of each category index in value."""
        if not isinstance(value, oar.Tensor):
            value = oar.to_tensor(np.asarray(value, dtype="int64"), place=self.logits.place)
        if value.dtype.is_floating_point:
            raise TypeError(f"Categorical.probs: argument 'value' must hold integer category "
                            f"indices, got dtype {_dtype_name(value.dtype)}")
        k = self.logits.shape[-1]
        if value.size and not (0 <= int(value.min()) and int(value.max()) < k):
            raise ValueError(f"Categorical.probs: argument 'value' must hold indices in "
                             f"[0, {k}), got values in [{int(value.min())}, {int(value.max())}]")
        value = value.astype("int64")
        if self._prob.ndim == 1:
            return oar.gather(self._prob, value.reshape([-1])).reshape(list(value.shape))
        if value.ndim == 1 or list(value.shape[:-1]) != list(self._prob.shape[:-1]):
            idx = value.reshape([1] * (self._prob.ndim - 1) + [-1])
            idx = idx.broadcast_to(list(self._prob.shape[:-1]) + [value.size])
            return oar.take_along_axis(self._prob, idx, axis=-1)
        return oar.take_along_axis(self._prob, value, axis=-1)

    def prob(self, value):
        return self.probs(value)

    def log_prob(self, value):
        return self.probs(value).log()
