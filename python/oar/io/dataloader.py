"""DataLoader: batches from a dataset, optionally built by forked worker processes that pass
arrays through shared memory (see collate.py and Note [DataLoader workers] in
docs/notes/training_api.md)."""

import atexit
import itertools
import multiprocessing
import queue
import random
import time
import traceback
import weakref

import numpy as np

from . import collate as _collate
from .dataset import IterableDataset
from .sampler import BatchSampler

_worker_info = None
# Live pools and iterators: shut down at interpreter exit, so no worker outlives the main
# process and no shared-memory batch file is left behind (iterators caught in reference
# cycles are otherwise never finalized).
_live_pools = weakref.WeakSet()
_live_iters = weakref.WeakSet()


@atexit.register
def _shutdown_all():
    for it in list(_live_iters):
        try:
            it._finish(force=True)
        except Exception:
            pass
    for pool in list(_live_pools):
        try:
            pool.shutdown()
        except Exception:
            pass


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, dataset, seed."""

    def __init__(self, id, num_workers, dataset, seed):  # noqa: A002 (Paddle's name)
        self.id, self.num_workers, self.dataset, self.seed = id, num_workers, dataset, seed

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """The current worker's WorkerInfo inside a DataLoader worker process, else None."""
    return _worker_info


class _WorkerError:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, worker_id, exc):
        self.worker_id = worker_id
        self.exc_type = type(exc)
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self):
        msg = (
            f"DataLoader worker {self.worker_id} raised {self.exc_type.__name__}.\n"
            f"Traceback in the worker:\n{self.text}"
        )
        try:
            err = self.exc_type(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err


class _IterEnd:
    """A worker's IterableDataset is exhausted."""


def _worker_loop(
    dataset,
    is_iterable,
    batch_size,
    drop_last,
    index_queue,
    result_queue,
    collate_fn,
    auto_collate,
    worker_init_fn,
    worker_id,
    num_workers,
    seed,
    use_shared_memory,
    shm_dir,
):
    global _worker_info
    # The main process (a forkserver's child's parent is the server, so not os.getppid()).
    main_process = multiprocessing.parent_process()
    try:
        from .. import _C

        # One thread per worker, as PyTorch's workers: num_workers processes each with the
        # machine's thread count would oversubscribe the cores. (A forked child may open
        # OpenMP teams: Note [Fork safety].)
        _C.set_num_threads(1)
        # Workers make their samples on the CPU whatever the main process's device: a forked
        # child cannot use a device its parent initialized (Note [Devices after fork]), and
        # the main process puts the batches on its device.
        from .._device import set_device

        set_device("cpu")
        _collate._SHM_DIR = shm_dir  # the main process's (spawned workers import afresh)
        random.seed(seed)
        np.random.seed(seed % (2**32))
        _C.ops._seed(seed % (2**63))
        _worker_info = WorkerInfo(worker_id, num_workers, dataset, seed)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        it = iter(dataset) if is_iterable else None
    except Exception as e:  # reported on the first task
        init_error = _WorkerError(worker_id, e)
    else:
        init_error = None
    exhausted = False
    while True:
        try:
            task = index_queue.get(timeout=1.0)
        except queue.Empty:
            if main_process is not None and not main_process.is_alive():  # it died
                return
            continue
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if task is None:
            return
        task_id, indices = task
        if init_error is not None:
            result_queue.put((task_id, worker_id, None, None, init_error))
            continue
        try:
            if is_iterable:
                if exhausted:
                    result_queue.put((task_id, worker_id, None, _IterEnd(), None))
                    continue
                samples = list(itertools.islice(it, batch_size or 1))
                if not samples or (drop_last and batch_size and len(samples) < batch_size):
                    exhausted = True
                    result_queue.put((task_id, worker_id, None, _IterEnd(), None))
                    continue
            else:
                samples = [dataset[i] for i in indices]
            if auto_collate:
                batch = (
                    collate_fn(samples)
                    if collate_fn is not None
                    else _collate.collate_numpy(samples)
                )
            else:
                batch = collate_fn(samples[0]) if collate_fn is not None else samples[0]
            path, struct = _collate.pack(batch, use_shared_memory)
            result_queue.put((task_id, worker_id, path, struct, None))
        except Exception as e:
            result_queue.put((task_id, worker_id, None, None, _WorkerError(worker_id, e)))


def _rebuild_tensor(array, dtype, stop_gradient):
    from .._creation import to_tensor

    t = to_tensor(array, dtype=dtype)
    t.stop_gradient = stop_gradient
    return t


def _reduce_tensor(t):
    """How multiprocessing sends a Tensor to a spawned or forkserver worker (in a dataset,
    a collate_fn's closure): its values (bfloat16 widened to float32, exact) and dtype, as a
    new CPU leaf, like Paddle's and PyTorch's multiprocessing reductions (which share the
    memory instead; a copy here)."""
    dtype = str(t.dtype).split(".")[-1]
    src = t.astype("float32") if dtype == "bfloat16" else t
    return _rebuild_tensor, (src.numpy(), dtype, t.stop_gradient)


def _register_tensor_reduction():
    from multiprocessing.reduction import ForkingPickler

    from .._C import Tensor

    ForkingPickler.register(Tensor, _reduce_tensor)


_register_tensor_reduction()


def _start_method_context(value):
    """The multiprocessing context of DataLoader(multiprocessing_context=value): None is
    'fork' where the platform has it (Paddle's and PyTorch's default on Linux; Note [Fork
    safety] in docs/notes/fork_safety.md), else the platform's default."""
    if value is None:
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else None)
    if isinstance(value, str):
        methods = multiprocessing.get_all_start_methods()
        if value not in methods:
            raise ValueError(
                f"DataLoader: multiprocessing_context must be one of {methods} or a "
                f"multiprocessing context, got {value!r}"
            )
        return multiprocessing.get_context(value)
    if isinstance(value, multiprocessing.context.BaseContext):
        return value
    raise TypeError(
        "DataLoader: multiprocessing_context must be a start method name or a "
        f"multiprocessing context, got {type(value).__name__}"
    )


class _Workers:
    """A pool of worker processes (forked unless the loader's multiprocessing_context
    says otherwise) and their queues."""

    def __init__(self, loader):
        ctx = loader._mp_context
        from .._creation import randint

        from ..base import framework

        with framework.outside_program():  # Python data, not part of a static program
            base_seed = int(randint(0, 2**62, [1]).numpy()[0])  # from oar's generator: oar.seed fixes it
        self.result_queue = ctx.Queue()
        self.index_queues, self.procs = [], []
        self.alive = False
        for wid in range(loader.num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            p = ctx.Process(
                target=_worker_loop,
                daemon=True,
                args=(
                    loader.dataset,
                    loader._is_iterable,
                    loader.batch_size,
                    loader.drop_last,
                    iq,
                    self.result_queue,
                    loader.collate_fn,
                    loader._auto_collate,
                    loader.worker_init_fn,
                    wid,
                    loader.num_workers,
                    base_seed + wid,
                    loader.use_shared_memory,
                    _collate._SHM_DIR,
                ),
            )
            self.alive = True  # shutdown() below must stop the workers already started
            try:
                p.start()
            except Exception as e:
                self.shutdown()
                if ctx.get_start_method() == "fork":
                    raise
                raise RuntimeError(
                    f"DataLoader: starting a worker with multiprocessing_context="
                    f"{ctx.get_start_method()!r} pickles the dataset, collate_fn and "
                    f"worker_init_fn (only 'fork' does not), and that failed: "
                    f"{type(e).__name__}: {e}"
                ) from e
            self.index_queues.append(iq)
            self.procs.append(p)
        self.alive = True
        _live_pools.add(self)

    def check(self):
        for wid, p in enumerate(self.procs):
            if not p.is_alive():
                raise RuntimeError(
                    f"DataLoader worker {wid} (pid {p.pid}) exited unexpectedly "
                    f"with exit code {p.exitcode}"
                )

    def drain(self):
        while True:
            try:
                item = self.result_queue.get_nowait()
            except (queue.Empty, EOFError, OSError):
                return
            _collate.discard(item[2])

    def shutdown(self):
        if not self.alive:
            return
        self.alive = False
        for iq in self.index_queues:
            try:
                iq.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5.0
        for p in self.procs:
            while p.is_alive() and time.monotonic() < deadline:
                self.drain()
                p.join(timeout=0.05)
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
        self.drain()
        for p in self.procs:  # batches still in a dead worker's queue buffer
            _collate.discard_worker_files(p.pid)
        for q in self.index_queues + [self.result_queue]:
            q.close()
        self.result_queue.cancel_join_thread()


class _MultiProcessIter:
    def __init__(self, loader):
        self.loader = loader
        # Draw the shuffle before the worker seeds, so a seeded run visits samples in the
        # same order with or without workers.
        self.batches = None
        if not loader._is_iterable:
            batches = iter(loader.batch_sampler)
            first = next(batches, None)
            self.batches = itertools.chain([] if first is None else [first], batches)
        pool = loader._persistent
        self.persistent = False
        if pool is not None and pool.alive and not loader._persistent_busy:
            self.workers, self.persistent = pool, True
        elif loader.persistent_workers and not loader._is_iterable and not loader._persistent_busy:
            self.workers = loader._persistent = _Workers(loader)
            self.persistent = True
        else:  # a one-epoch pool
            self.workers = _Workers(loader)
        if self.persistent:
            loader._persistent_busy = True
        self.active = list(range(loader.num_workers))
        self.next_worker = 0
        self.send_idx = self.rcvd_idx = 0
        self.outstanding = {}  # task id -> worker id
        self.buffer = {}
        self.done = False
        _live_iters.add(self)
        for _ in range(loader.prefetch_factor * loader.num_workers):
            if not self._put():
                break

    def _put(self):
        if not self.active:
            return False
        if self.batches is not None:
            try:
                indices = next(self.batches)
            except StopIteration:
                return False
        else:
            indices = None
        wid = self.active[self.next_worker % len(self.active)]
        self.next_worker += 1
        self.workers.index_queues[wid].put((self.send_idx, indices))
        self.outstanding[self.send_idx] = wid
        self.send_idx += 1
        return True

    def __iter__(self):
        return self

    def _get(self):
        timeout = self.loader.timeout
        start = time.monotonic()
        while True:
            try:
                return self.workers.result_queue.get(timeout=0.5)
            except queue.Empty:
                self.workers.check()
                if timeout and time.monotonic() - start > timeout:
                    raise RuntimeError(
                        f"DataLoader: no batch from the workers in {timeout} s (timeout)"
                    )

    def __next__(self):
        try:
            while True:
                if self.done or not self.outstanding:
                    self._finish()
                    raise StopIteration
                while self.rcvd_idx not in self.buffer:
                    if self.rcvd_idx not in self.outstanding:  # skipped task
                        break
                    item = self._get()
                    self.buffer[item[0]] = item
                item = self.buffer.pop(self.rcvd_idx, None)
                self.outstanding.pop(self.rcvd_idx, None)
                self.rcvd_idx += 1
                if item is None:
                    continue
                _, wid, path, struct, err = item
                if err is not None:
                    self._finish()
                    err.reraise()
                if isinstance(struct, _IterEnd):
                    if wid in self.active:
                        self.active.remove(wid)
                    self._put()  # keep the other workers' queues full
                    continue
                self._put()
                return _collate.unpack(path, struct)
        except StopIteration:
            raise
        except BaseException:
            self._finish(force=True)
            raise

    def _finish(self, force=False):
        if self.done:
            return
        self.done = True
        for item in self.buffer.values():
            _collate.discard(item[2])
        self.buffer.clear()
        if self.persistent:
            self.loader._persistent_busy = False
            if not self.outstanding and not force:
                return  # persistent workers stay for the next epoch
            self.loader._persistent = None
        self.workers.shutdown()

    def __del__(self):
        try:
            self._finish(force=bool(self.outstanding))
        except Exception:
            pass


class _SingleProcessIter:
    def __init__(self, loader):
        self.loader = loader
        if loader._is_iterable:
            self.it = iter(loader.dataset)
        else:
            self.batches = iter(loader.batch_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        return _collate.loader_output(self._next_batch())

    def _next_batch(self):
        ld = self.loader
        if ld._is_iterable:
            if not ld._auto_collate:
                sample = next(self.it)
                return (
                    ld.collate_fn(sample) if ld.collate_fn else _collate.default_convert_fn(sample)
                )
            samples = list(itertools.islice(self.it, ld.batch_size))
            if not samples or (ld.drop_last and len(samples) < ld.batch_size):
                raise StopIteration
        else:
            indices = next(self.batches)
            if not ld._auto_collate:
                sample = ld.dataset[indices[0]]
                return (
                    ld.collate_fn(sample) if ld.collate_fn else _collate.default_convert_fn(sample)
                )
            samples = [ld.dataset[i] for i in indices]
        if ld.collate_fn is not None:
            return ld.collate_fn(samples)
        return _collate.default_collate_fn(samples)


class DataLoader:
    """Iterates over `dataset` in batches (Paddle's oar.io.DataLoader).

    num_workers > 0 starts that many worker processes; each builds whole batches and sends
    their arrays through shared memory; prefetch_factor batches per worker are in flight.
    Workers are forked unless multiprocessing_context (PyTorch's argument: 'fork', 'spawn',
    'forkserver' or a multiprocessing context) says otherwise; the last two pickle the
    dataset, collate_fn and worker_init_fn for each worker. Shuffling and worker seeds
    come from oar's generator, so oar.seed() makes runs repeat.
    """

    def __init__(
        self,
        dataset,
        feed_list=None,
        places=None,
        return_list=True,
        batch_sampler=None,
        batch_size=1,
        shuffle=False,
        drop_last=False,
        collate_fn=None,
        num_workers=0,
        use_buffer_reader=True,
        prefetch_factor=2,
        use_shared_memory=True,
        timeout=0,
        worker_init_fn=None,
        persistent_workers=False,
        multiprocessing_context=None,
    ):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                f"DataLoader: num_workers must be a non-negative integer, got {num_workers!r}"
            )
        if not isinstance(prefetch_factor, int) or prefetch_factor <= 0:
            raise ValueError(
                f"DataLoader: prefetch_factor must be a positive integer, got {prefetch_factor!r}"
            )
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout must be >= 0, got {timeout}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError("DataLoader: collate_fn must be callable")
        self._mp_context = _start_method_context(multiprocessing_context)
        self.multiprocessing_context = multiprocessing_context
        self.dataset = dataset
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.collate_fn, self.worker_init_fn = collate_fn, worker_init_fn
        self.persistent_workers = bool(persistent_workers) and num_workers > 0
        self.use_shared_memory = bool(use_shared_memory)
        self.return_list = return_list
        self.feed_list = feed_list
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if batch_sampler is not None or shuffle:
                raise ValueError(
                    "DataLoader: an IterableDataset takes neither batch_sampler nor shuffle"
                )
            if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
                raise ValueError(
                    f"DataLoader: batch_size must be a positive integer or None, got {batch_size!r}"
                )
            self.batch_sampler = None
            self.batch_size, self.drop_last = batch_size, drop_last
        elif batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler is exclusive with batch_size, shuffle and drop_last"
                )
            self.batch_sampler = batch_sampler
            self.batch_size, self.drop_last = getattr(batch_sampler, "batch_size", None), False
        elif batch_size is None:
            self.batch_sampler = BatchSampler(
                dataset, shuffle=shuffle, batch_size=1, drop_last=False
            )
            self.batch_size, self.drop_last = None, False
        else:
            self.batch_sampler = BatchSampler(
                dataset, shuffle=shuffle, batch_size=batch_size, drop_last=drop_last
            )
            self.batch_size, self.drop_last = batch_size, drop_last
        self._auto_collate = self.batch_size is not None
        self._persistent = None
        self._persistent_busy = False

    def __len__(self):
        if self._is_iterable:
            raise TypeError("DataLoader: the length of an IterableDataset loader is unknown")
        return len(self.batch_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            it = _SingleProcessIter(self)
        else:
            it = _MultiProcessIter(self)
        if self.feed_list and not self.return_list:
            # Static mode's feed: per place (one here) {fed variable's name: batch}, as Paddle.
            names = [v.name for v in self.feed_list]
            return ([dict(zip(names, batch))] for batch in it)
        return it

    def __call__(self):
        return self.__iter__()

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        """The batches of a slot-file dataset (oar.base / oar.distributed InMemoryDataset,
        QueueDataset, ...) for static programs: each step a list of one feed dict per place."""
        from ..base.dataset import DatasetLoader
        return DatasetLoader(dataset, places, drop_last)

    def __del__(self):
        p = getattr(self, "_persistent", None)
        if p is not None:
            try:
                p.shutdown()
            except Exception:
                pass
