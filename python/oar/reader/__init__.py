"""paddle.reader: reader creators' decorators (a reader is a function returning an
iterator of samples) and paddle.batch."""
from .decorator import (  # noqa: F401
    batch, buffered, cache, chain, compose, firstn, map_readers, multiprocess_reader, shuffle, xmap_readers,
)

__all__ = []
