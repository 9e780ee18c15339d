"""paddle.batch: Paddle's legacy reader decorator that groups a sample reader's items into
lists of batch_size."""

__all__ = ["batch"]


def batch(reader, batch_size, drop_last=False):
    """A reader creator yielding lists of batch_size consecutive items of reader() (the last,
    shorter list too unless drop_last)."""
    if not callable(reader):
        raise TypeError(f"batch: reader must be a callable returning an iterable, got "
                        f"{type(reader).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch: batch_size must be a positive int, got {batch_size!r}")

    def batch_reader():
        items = []
        for item in reader():
            items.append(item)
            if len(items) == batch_size:
                yield items
                items = []
        if items and not drop_last:
            yield items
    return batch_reader
