"""Sequence layers: RNNTLoss (F.rnnt_loss as a layer); BeamSearchDecoder and dynamic_decode
are re-exported from _decode so that oar.nn serves them from one lazy entry."""
from ._decode import BeamSearchDecoder, dynamic_decode  # noqa: F401
from .layer import Layer

__all__ = ["RNNTLoss", "BeamSearchDecoder", "dynamic_decode"]


class RNNTLoss(Layer):
    """The RNN transducer loss of log-probs [B, T, U+1, D] (F.rnnt_loss)."""

    def __init__(self, blank=0, fastemit_lambda=0.001, reduction="mean", name=None):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"RNNTLoss: reduction must be 'mean', 'sum' or 'none', got "
                             f"'{reduction}'")
        self.blank, self.fastemit_lambda, self.reduction = blank, fastemit_lambda, reduction
        self.name = name

    def forward(self, input, label, input_lengths, label_lengths):  # noqa: A002
        from ._functional_rnnt import rnnt_loss
        return rnnt_loss(input, label, input_lengths, label_lengths, self.blank,
                         self.fastemit_lambda, self.reduction)
