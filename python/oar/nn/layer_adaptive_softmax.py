"""AdaptiveLogSoftmaxWithLoss: the layer over F.adaptive_log_softmax_with_loss, with the full
log-probabilities (log_prob) and the most likely class (predict)."""
import numbers

from .layer import Layer

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class AdaptiveLogSoftmaxWithLoss(Layer):
    """Adaptive softmax over n_classes: the head scores the cutoffs[0] most frequent classes
    and one column per cluster; cluster i (classes cutoffs[i-1] .. cutoffs[i] - 1, the last
    ending at n_classes) has a tail of two matrices [in_features, in_features //
    div_value**(i+1)] and [that, cluster size]. Weights default to Xavier; head_bias adds a
    bias to the head. forward(input, label) -> (output, loss)."""

    def __init__(self, in_features, n_classes, cutoffs, weight_attr=None, bias_attr=None,
                 div_value=4.0, head_bias=False, name=None):
        super().__init__()
        op = "AdaptiveLogSoftmaxWithLoss"
        for arg, v in (("in_features", in_features), ("n_classes", n_classes)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError(f"{op}: {arg} must be a positive int, got {v!r}")
        cutoffs = list(cutoffs) if isinstance(cutoffs, (list, tuple)) else cutoffs
        if not isinstance(cutoffs, list) or not cutoffs or \
                any(isinstance(c, bool) or not isinstance(c, numbers.Real) or int(c) != c
                    for c in cutoffs) or \
                cutoffs != sorted(set(cutoffs)) or cutoffs[0] <= 0 or cutoffs[-1] > n_classes - 1:
            raise ValueError(f"{op}: cutoffs must be unique increasing ints in [1, n_classes - 1 = "
                             f"{n_classes - 1}], got {cutoffs!r}")
        if isinstance(div_value, bool) or not isinstance(div_value, numbers.Real) or \
                not div_value > 0:
            raise ValueError(f"{op}: div_value must be a number > 0, got {div_value!r}")
        self.in_features, self.n_classes = int(in_features), int(n_classes)
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value, self.is_head_bias = div_value, bool(head_bias)
        self._weight_attr, self._bias_attr = weight_attr, bias_attr
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head_weight = self.create_parameter([self.in_features, self.head_size], weight_attr)
        self.head_bias = (self.create_parameter([self.head_size], bias_attr, is_bias=True)
                          if self.is_head_bias else None)
        self.tail_weights = []
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            pair = [self.create_parameter([self.in_features, hsz], weight_attr),
                    self.create_parameter([hsz, osz], weight_attr)]
            for j, p in enumerate(pair):  # registered, so parameters() and optimizers see them
                self.add_parameter(f"tail_weights_{i}_{j}", p)
            self.tail_weights.append(pair)

    def forward(self, input, label):  # noqa: A002
        from ._functional_adaptive_softmax import adaptive_log_softmax_with_loss
        return adaptive_log_softmax_with_loss(input, label, self.head_weight, self.tail_weights,
                                              self.cutoffs, self.head_bias)

    def _full_log_prob(self, input, head_output):  # noqa: A002
        import oar
        from . import functional as F
        from ._functional_adaptive_softmax import _tail_logprob
        head_logprob = F.log_softmax(head_output, axis=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            parts.append(_tail_logprob(input, self.tail_weights[i])
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return oar.concat(parts, axis=1)

    def _head(self, input, who):  # noqa: A002
        from . import functional as F
        if input.ndim != 2 or input.shape[1] != self.in_features:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss.{who}: input must have shape [N, "
                             f"{self.in_features}], got {list(input.shape)}")
        return F.linear(input, self.head_weight, self.head_bias)

    def log_prob(self, input):  # noqa: A002
        """[N, n_classes] log-probabilities of every class."""
        return self._full_log_prob(input, self._head(input, "log_prob"))

    def predict(self, input):  # noqa: A002
        """[N] most likely class of each row (float32, as Paddle); the tails are evaluated
        only for rows whose head prefers a cluster."""
        import oar
        head_output = self._head(input, "predict")
        output = oar.argmax(head_output, axis=1)
        rows = oar.nonzero(output >= self.shortlist_size).reshape([-1])
        if rows.shape[0]:
            full = self._full_log_prob(input.index_select(rows, axis=0),
                                       head_output.index_select(rows, axis=0))
            output = oar.scatter(output, rows, oar.argmax(full, axis=1))
        return output.astype("float32")

    def extra_repr(self):
        return (f"in_features={self.in_features}, n_classes={self.n_classes}, "
                f"cutoffs={self.cutoffs[:-1]}, div_value={self.div_value}, "
                f"head_bias={self.is_head_bias}")
