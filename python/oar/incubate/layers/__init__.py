"""paddle.incubate.layers: partial_concat, partial_sum, shuffle_batch, tdm_child, tdm_sampler."""
from .nn import partial_concat, partial_sum, shuffle_batch, tdm_child, tdm_sampler  # noqa: F401

__all__ = []  # as Paddle's: the names are reached as paddle.incubate.layers.<name>
