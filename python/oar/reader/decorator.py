"""Reader decorators (Paddle's paddle.reader.decorator): each takes reader creators (no-
argument functions returning an iterator of samples) and returns a new one."""
import itertools
import queue
import random
import threading

_END = object()


def _check_reader(r, who, arg="reader"):
    if not callable(r):
        raise TypeError(f"{who}: {arg} must be a reader creator (a function returning an iterator), got "
                        f"{type(r).__name__}")


def _check_count(n, who, arg, low=1):
    if isinstance(n, bool) or not isinstance(n, int) or n < low:
        raise ValueError(f"{who}: {arg} must be an int >= {low}, got {n!r}")
    return n


def batch(reader, batch_size, drop_last=False):
    """A reader of lists of batch_size samples (the last one shorter unless drop_last)."""
    _check_reader(reader, "batch")
    _check_count(batch_size, "batch", "batch_size")

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b
    return batch_reader


def cache(reader):
    """Reads `reader` once into memory; every pass yields the cached samples."""
    _check_reader(reader, "cache")
    data = []
    done = []

    def cached():
        if not done:
            data.extend(reader())
            done.append(True)
        yield from data
    return cached


def map_readers(func, *readers):
    """Yields func(a, b, ...) for the samples a, b, ... the readers yield together."""
    if not callable(func):
        raise TypeError(f"map_readers: func must be callable, got {type(func).__name__}")
    for i, r in enumerate(readers):
        _check_reader(r, "map_readers", f"readers[{i}]")

    def reader():
        yield from map(func, *[r() for r in readers])
    return reader


def shuffle(reader, buf_size):
    """Shuffles the samples within windows of buf_size."""
    _check_reader(reader, "shuffle")
    _check_count(buf_size, "shuffle", "buf_size")

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        random.shuffle(buf)
        yield from buf
    return shuffled


def chain(*readers):
    """The samples of each reader in turn."""
    for i, r in enumerate(readers):
        _check_reader(r, "chain", f"readers[{i}]")

    def reader():
        yield from itertools.chain(*[r() for r in readers])
    return reader


class ComposeNotAligned(ValueError):
    pass


def compose(*readers, check_alignment=True):
    """Samples of the readers joined into one tuple (a tuple sample is flattened into it);
    with check_alignment, readers of different lengths raise ComposeNotAligned."""
    for i, r in enumerate(readers):
        _check_reader(r, "compose", f"readers[{i}]")

    def flat(x):
        return x if isinstance(x, tuple) else (x,)

    def reader():
        its = [r() for r in readers]
        if not check_alignment:
            for outs in zip(*its):
                yield sum((flat(o) for o in outs), ())
            return
        for outs in itertools.zip_longest(*its, fillvalue=_END):
            if any(o is _END for o in outs):
                raise ComposeNotAligned("compose: the readers yield different numbers of samples")
            yield sum((flat(o) for o in outs), ())
    return reader


def buffered(reader, size):
    """Reads ahead up to `size` samples in a background thread."""
    _check_reader(reader, "buffered")
    _check_count(size, "buffered", "size")

    def reader_():
        q = queue.Queue(maxsize=size)
        failure = []

        def fill():
            try:
                for sample in reader():
                    q.put(sample)
            except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
                failure.append(e)
            q.put(_END)
        threading.Thread(target=fill, daemon=True).start()
        while True:
            sample = q.get()
            if sample is _END:
                break
            yield sample
        if failure:
            raise failure[0]
    return reader_


def firstn(reader, n):
    """The first n samples."""
    _check_reader(reader, "firstn")
    _check_count(n, "firstn", "n", 0)

    def reader_():
        yield from itertools.islice(reader(), n)
    return reader_


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """map(mapper, reader()) computed by process_num threads (in order if `order`)."""
    _check_reader(reader, "xmap_readers")
    if not callable(mapper):
        raise TypeError(f"xmap_readers: mapper must be callable, got {type(mapper).__name__}")
    _check_count(process_num, "xmap_readers", "process_num")
    _check_count(buffer_size, "xmap_readers", "buffer_size")

    def reader_():
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(process_num) as pool:
            window = []
            for sample in reader():
                window.append(pool.submit(mapper, sample))
                if len(window) >= buffer_size:
                    if order:
                        yield window.pop(0).result()
                    else:
                        done = next((f for f in window if f.done()), window[0])
                        window.remove(done)
                        yield done.result()
            for f in window:
                yield f.result()
    return reader_


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """The samples of several readers, read concurrently (their order interleaves). The
    readers run in threads of this process: a sample needs no pickling."""
    if not isinstance(readers, (list, tuple)) or not readers:
        raise ValueError("multiprocess_reader: readers must be a non-empty list of reader creators")
    for i, r in enumerate(readers):
        _check_reader(r, "multiprocess_reader", f"readers[{i}]")
    _check_count(queue_size, "multiprocess_reader", "queue_size")

    def reader_():
        q = queue.Queue(maxsize=queue_size)
        failure = []

        def work(r):
            try:
                for sample in r():
                    if sample is None:
                        raise ValueError("multiprocess_reader: a sample is None")
                    q.put(sample)
            except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
                failure.append(e)
            q.put(_END)
        for r in readers:
            threading.Thread(target=work, args=(r,), daemon=True).start()
        finished = 0
        while finished < len(readers):
            sample = q.get()
            if sample is _END:
                finished += 1
                continue
            yield sample
        if failure:
            raise failure[0]
    return reader_
