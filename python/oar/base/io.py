"""paddle.base.io: PyReader (feeds a program from a Python generator) and DataLoader."""
import numpy as np

from .data_feeder import columns_to_feed, samples_to_columns


def __getattr__(name):
    if name == "DataLoader":
        from ..io import DataLoader

        return DataLoader
    if name in ("cache", "map_readers", "buffered", "compose", "chain", "shuffle", "firstn", "xmap_readers",
                "multiprocess_reader", "batch"):
        from ..reader import decorator

        return getattr(decorator, name)
    raise AttributeError(f"module 'oar.base.io' has no attribute '{name}'")


class PyReader:
    """Feeds batches from a Python generator: iterable (for data in reader(): ...) or, with
    iterable=False, started with start() and read by Executor.run(feed=None) until it
    raises base.core.EOFException (then reset())."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False):
        from .. import in_dynamic_mode

        self._feed_list = list(feed_list or [])
        if not in_dynamic_mode() and not self._feed_list:
            raise ValueError("PyReader: feed_list is required in static-graph mode")
        if not in_dynamic_mode() and return_list:
            raise ValueError("PyReader: return_list=True is only for dynamic mode")
        self._iterable = bool(iterable)
        self._return_list = bool(return_list) or in_dynamic_mode()
        self._batches = None  # () -> iterator of column lists
        self._running = None

    # ---- sources
    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        """Samples (tuples) grouped into batches of batch_size."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"PyReader.decorate_sample_generator: batch_size must be an int >= 1, got "
                             f"{batch_size!r}")
        from ..reader import batch

        self.decorate_sample_list_generator(batch(sample_generator, batch_size, drop_last), places)

    def decorate_sample_list_generator(self, reader, places=None):
        """Lists of samples (what paddle.batch yields), one list per batch."""
        self._check_source(reader, "decorate_sample_list_generator")
        self._batches = lambda: (samples_to_columns(b, "PyReader") for b in reader())

    def decorate_batch_generator(self, reader, places=None):
        """Whole batches: tuples of arrays (or Tensors), one per variable."""
        self._check_source(reader, "decorate_batch_generator")

        def columns():
            for b in reader():
                if not isinstance(b, (list, tuple)):
                    b = [b]
                yield [x.numpy() if hasattr(x, "numpy") else np.asarray(x) for x in b]
        self._batches = columns

    @staticmethod
    def _check_source(reader, who):
        if not callable(reader):
            raise TypeError(f"PyReader.{who}: expected a generator function (called for each pass), got "
                            f"{type(reader).__name__}")

    def _convert(self, columns):
        if self._return_list:
            import oar

            return [oar.to_tensor(np.stack([np.asarray(s) for s in c]) if isinstance(c, list) else c)
                    for c in columns]
        return [columns_to_feed(self._feed_list, columns, "PyReader")]

    # ---- iterable use
    def __call__(self):
        if not self._iterable:
            raise RuntimeError("PyReader: a reader made with iterable=False is read by Executor.run after "
                               "start(), not iterated")
        return iter(self)

    def __iter__(self):
        if self._batches is None:
            raise RuntimeError("PyReader: no data source: call decorate_sample_generator, "
                               "decorate_sample_list_generator or decorate_batch_generator first")
        for columns in self._batches():
            yield self._convert(columns)

    # ---- non-iterable use
    def start(self):
        if self._iterable:
            raise RuntimeError("PyReader.start: only a reader made with iterable=False is started")
        if self._batches is None:
            raise RuntimeError("PyReader.start: no data source (decorate the reader first)")
        from ..static import _executor

        self._running = self._batches()
        _executor.started_readers.append(self)

    def reset(self):
        from ..static import _executor

        self._running = None
        if self in _executor.started_readers:
            _executor.started_readers.remove(self)

    def _next_feed(self):
        """The next batch's feed, or None when the data is exhausted."""
        for columns in self._running:
            return columns_to_feed(self._feed_list, columns, "PyReader")
        return None
