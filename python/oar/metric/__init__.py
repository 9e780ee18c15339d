"""oar.metric: streaming evaluation metrics (Paddle's paddle.metric). A metric's compute()
runs on the model outputs and labels (as Tensors), update() takes NumPy arrays and returns
the batch's value, accumulate() the value over everything since reset()."""

import numpy as np

from .. import _C


def _np(x):
    if isinstance(x, _C.Tensor):
        return x.numpy() if x.dtype.name != "bfloat16" else x.astype("float32").numpy()
    return np.asarray(x)


class Metric:
    """Base class: implement reset, update, accumulate, name (and optionally compute)."""

    def __init__(self):
        pass

    def reset(self):
        raise NotImplementedError(f"{type(self).__name__}.reset")

    def update(self, *args):
        raise NotImplementedError(f"{type(self).__name__}.update")

    def accumulate(self):
        raise NotImplementedError(f"{type(self).__name__}.accumulate")

    def name(self):
        raise NotImplementedError(f"{type(self).__name__}.name")

    def compute(self, *args):
        """Pre-processing on the outputs and labels; its results go to update()."""
        return args


def _labels_as_index(label, pred_shape):
    label = _np(label)
    if label.ndim == len(pred_shape) and label.shape[-1] == pred_shape[-1] and pred_shape[-1] != 1:
        return label.argmax(-1).reshape(-1, 1)  # one-hot or soft labels
    return label.reshape(-1, 1)


class Accuracy(Metric):
    """Top-k classification accuracy for each k in topk."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        super().__init__()
        topk = (topk,) if isinstance(topk, int) else tuple(topk)
        if not topk or any(not isinstance(k, int) or k <= 0 for k in topk):
            raise ValueError(f"Accuracy: topk must be positive integers, got {topk}")
        self.topk, self.maxk = topk, max(topk)
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in topk] if self.maxk != 1 else [name]
        self.reset()

    def compute(self, pred, label, *args):
        """[N, maxk] float32 Tensor (as Paddle's), on pred's place: 1 where the i-th best
        class is the label."""
        p = _np(pred)
        if p.ndim == 1:
            p = p.reshape(1, -1)
        p = p.reshape(-1, p.shape[-1])
        if self.maxk > p.shape[-1]:
            raise ValueError(f"Accuracy: topk {self.maxk} exceeds the {p.shape[-1]} classes")
        order = np.argsort(-p, axis=-1, kind="stable")[:, : self.maxk]
        lab = _labels_as_index(label, _np(pred).shape)
        if lab.shape[0] != order.shape[0]:
            raise ValueError(f"Accuracy: {order.shape[0]} predictions but {lab.shape[0]} labels")
        place = pred.place if isinstance(pred, _C.Tensor) else None
        return _C.to_tensor((order == lab).astype(np.float32), None, place, True)

    def update(self, correct, *args):
        correct = _np(correct)
        n = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            c = float(correct[..., :k].sum())
            accs.append(c / n if n else 0.0)
            self.total[i] += c
            self.count[i] += n
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [t / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


def _binary(preds, labels, cls):
    p = _np(preds).reshape(-1).astype(np.float64)
    lab = _np(labels).reshape(-1)
    if p.shape != lab.shape:
        raise ValueError(f"{cls}: {p.size} predictions but {lab.size} labels")
    return np.floor(p + 0.5).astype(np.int64), lab.astype(np.int64)


class Precision(Metric):
    """Binary precision tp / (tp + fp); predictions are probabilities rounded at 0.5."""

    def __init__(self, name="precision", *args, **kwargs):
        super().__init__()
        self._name = name
        self.reset()

    def update(self, preds, labels):
        p, lab = _binary(preds, labels, "Precision")
        self.tp += int(((p == 1) & (lab == 1)).sum())
        self.fp += int(((p == 1) & (lab != 1)).sum())

    def reset(self):
        self.tp = self.fp = 0

    def accumulate(self):
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0

    def name(self):
        return self._name


class Recall(Metric):
    """Binary recall tp / (tp + fn); predictions are probabilities rounded at 0.5."""

    def __init__(self, name="recall", *args, **kwargs):
        super().__init__()
        self._name = name
        self.reset()

    def update(self, preds, labels):
        p, lab = _binary(preds, labels, "Recall")
        self.tp += int(((p == 1) & (lab == 1)).sum())
        self.fn += int(((p != 1) & (lab == 1)).sum())

    def reset(self):
        self.tp = self.fn = 0

    def accumulate(self):
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0

    def name(self):
        return self._name


class Auc(Metric):
    """Area under the ROC curve from histograms of the positive-class probability over
    num_thresholds bins (preds [N, 2]: column 1 is P(positive); or [N] / [N, 1])."""

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        super().__init__()
        if curve != "ROC":
            raise ValueError(f"Auc: only curve='ROC' is supported, got '{curve}'")
        if not isinstance(num_thresholds, int) or num_thresholds <= 0:
            raise ValueError(
                f"Auc: num_thresholds must be a positive integer, got {num_thresholds!r}"
            )
        self._curve, self._num_thresholds, self._name = curve, num_thresholds, name
        self.reset()

    def update(self, preds, labels):
        p = _np(preds)
        p = p[:, 1] if p.ndim == 2 and p.shape[1] == 2 else p.reshape(-1)
        lab = _np(labels).reshape(-1)
        if p.shape[0] != lab.shape[0]:
            raise ValueError(f"Auc: {p.shape[0]} predictions but {lab.shape[0]} labels")
        if p.size and (p.min() < 0 or p.max() > 1):
            raise ValueError("Auc: predictions must be probabilities in [0, 1]")
        bins = (p.astype(np.float64) * self._num_thresholds).astype(np.int64)
        n = self._num_thresholds + 1
        self._stat_pos += np.bincount(bins[lab != 0], minlength=n)
        self._stat_neg += np.bincount(bins[lab == 0], minlength=n)

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1, np.float64)
        self._stat_neg = np.zeros(self._num_thresholds + 1, np.float64)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self):
        pos = np.cumsum(self._stat_pos[::-1])
        neg = np.cumsum(self._stat_neg[::-1])
        pos_prev = np.concatenate([[0.0], pos[:-1]])
        neg_prev = np.concatenate([[0.0], neg[:-1]])
        auc = float(np.sum(np.abs(neg - neg_prev) * (pos + pos_prev) / 2.0))
        tot_pos, tot_neg = pos[-1], neg[-1]
        return auc / tot_pos / tot_neg if tot_pos > 0.0 and tot_neg > 0.0 else 0.0

    def name(self):
        return self._name


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002
    """Top-k accuracy of one batch as a 0-D Tensor of input's float dtype (Paddle's
    paddle.metric.accuracy); `correct`/`total`, when given, receive the counts."""
    m = Accuracy(topk=(k,))
    hits = m.compute(input, label)
    acc = m.update(hits)
    n_correct, n_total = int(hits[..., :k].sum()), int(hits.shape[0])
    for t, v in ((correct, n_correct), (total, n_total)):
        if t is not None:
            t.set_value(np.full(t.shape, v))
    dtype = input.dtype if isinstance(input, _C.Tensor) and input.dtype.is_floating_point else None
    place = input.place if isinstance(input, _C.Tensor) else None
    out = _C.to_tensor(np.array(acc, np.float32), None, place, True)
    return out.astype(dtype) if dtype is not None and dtype != out.dtype else out
