"""Embedding lookup: F.embedding and the Embedding layer (a row gather whose gradient
scatters back into the table; padding_idx rows output zeros and receive no gradient)."""

from .. import _C
from . import initializer as init
from .layer import Layer

_ops = _C.ops


def _padding(padding_idx, num, op):
    if padding_idx is None:
        return None
    p = int(padding_idx)
    if not -num <= p < num:
        raise ValueError(f"{op}: padding_idx must be in [-{num}, {num}), got {padding_idx}")
    return p + num if p < 0 else p


def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False, name=None):
    """Rows of weight [num_embeddings, dim] at the integer ids x; output shape x.shape + [dim]."""
    if not isinstance(x, _C.Tensor) or x.dtype.is_floating_point:
        raise TypeError(
            f"embedding: x must be an int32 or int64 tensor, got "
            f"{x.dtype.name if isinstance(x, _C.Tensor) else type(x).__name__}"
        )
    if weight.ndim != 2:
        raise ValueError(
            f"embedding: weight must be 2-D [num_embeddings, dim], got shape {weight.shape}"
        )
    if sparse:
        raise NotImplementedError(
            "embedding: sparse=True (SelectedRows gradients) is not supported"
        )
    num, dim = weight.shape
    pad = _padding(padding_idx, num, "embedding")
    ids = x.reshape([-1])
    if ids.shape[0]:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= num:
            raise IndexError(f"embedding: ids must be in [0, {num}), got values in [{lo}, {hi}]")
    out = _ops.index_select(weight, ids, 0)
    if pad is not None:
        keep = (ids != pad).astype(weight.dtype).reshape([-1, 1])
        out = out * keep
    return out.reshape(list(x.shape) + [dim])


class Embedding(Layer):
    """A lookup table of num_embeddings vectors of size embedding_dim (weight initialized
    Xavier-uniform as Paddle's create_parameter default)."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        sparse=False,
        weight_attr=None,
        name=None,
    ):
        super().__init__()
        if not isinstance(num_embeddings, int) or num_embeddings <= 0:
            raise ValueError(
                f"Embedding: num_embeddings must be a positive integer, got {num_embeddings!r}"
            )
        if not isinstance(embedding_dim, int) or embedding_dim <= 0:
            raise ValueError(
                f"Embedding: embedding_dim must be a positive integer, got {embedding_dim!r}"
            )
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx = _padding(padding_idx, num_embeddings, "Embedding")
        self._sparse = sparse
        self.weight = self.create_parameter(
            [num_embeddings, embedding_dim],
            attr=weight_attr,
            default_initializer=init.XavierUniform(),
        )
        if self._padding_idx is not None:
            from ..autograd import no_grad

            with no_grad():
                w = self.weight.numpy()
                w[self._padding_idx] = 0.0
                self.weight.set_value(w)

    def forward(self, x):
        return embedding(x, self.weight, self._padding_idx, sparse=self._sparse)

    def extra_repr(self):
        s = f"{self._num_embeddings}, {self._embedding_dim}"
        if self._padding_idx is not None:
            s += f", padding_idx={self._padding_idx}"
        return s + (", sparse=True" if self._sparse else "")
