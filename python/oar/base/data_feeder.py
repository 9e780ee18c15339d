"""paddle.base.DataFeeder: samples (tuples of arrays, one per input variable) into a feed
dict for Executor.run; PyReader batches through the same conversion."""
import numpy as np


def _var_dims(v):
    from ..static import _program

    return list(_program._dims(v))


def _np_dtype(v):
    return np.dtype(str(v.dtype).replace("oar.", "").replace("paddle.", "").replace("bfloat16", "float32"))


def columns_to_feed(feed_vars, columns, who):
    """{name: array}: each column (the samples' values of one variable) stacked, cast to
    the variable's dtype and shaped [batch] + its declared dims after the batch dim."""
    if len(columns) != len(feed_vars):
        raise ValueError(f"{who}: each sample must hold {len(feed_vars)} values (one per variable "
                         f"{[v.name for v in feed_vars]}), got {len(columns)}")
    feed = {}
    for v, col in zip(feed_vars, columns):
        arr = np.stack([np.asarray(s) for s in col]) if isinstance(col, (list, tuple)) else np.asarray(col)
        dims = _var_dims(v)
        rest = dims[1:]
        if rest and all(d >= 0 for d in rest):
            per = int(np.prod(rest))
            size = arr.size
            if arr.ndim == 0 or size != arr.shape[0] * per:
                raise ValueError(f"{who}: variable '{v.name}' takes samples of {per} values (shape {rest}), got "
                                 f"a batch of shape {list(arr.shape)}")
            arr = arr.reshape([arr.shape[0]] + rest)
        feed[v.name] = arr.astype(_np_dtype(v), copy=False)
    return feed


def samples_to_columns(samples, who):
    samples = list(samples)
    if not samples:
        raise ValueError(f"{who}: the batch holds no samples")
    width = len(samples[0]) if isinstance(samples[0], (list, tuple)) else None
    if width is None:
        raise TypeError(f"{who}: a sample must be a tuple or list of values, got {type(samples[0]).__name__}")
    for s in samples:
        if not isinstance(s, (list, tuple)) or len(s) != width:
            raise ValueError(f"{who}: every sample must hold {width} values, got {s!r:.80}")
    return [[s[i] for s in samples] for i in range(width)]


class DataFeeder:
    """Converts the samples a reader yields into Executor.run's feed."""

    def __init__(self, feed_list, place, program=None):
        if not isinstance(feed_list, (list, tuple)) or not feed_list:
            raise ValueError("DataFeeder: feed_list must be a non-empty list of static variables")
        for v in feed_list:
            if isinstance(v, str):
                raise TypeError("DataFeeder: feed_list must hold static variables (static.data), got a name; "
                                "pass the variables")
        self.feed_vars = list(feed_list)
        self.feed_names = [v.name for v in feed_list]
        self.place = place

    def feed(self, iterable):
        """{variable name: batch array} from an iterable of samples."""
        return columns_to_feed(self.feed_vars, samples_to_columns(iterable, "DataFeeder.feed"), "DataFeeder.feed")

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per place (one place here)."""
        return [self.feed(samples) for samples in iterable]
