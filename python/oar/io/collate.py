"""Batch collation and the shared-memory transport between DataLoader workers and the
main process. Workers stay in NumPy; only the main process makes oar Tensors."""

import collections.abc
import itertools
import mmap
import numbers
import os
import tempfile

import numpy as np

from .. import _C


def _np(x):
    if isinstance(x, _C.Tensor):
        if x.dtype.name == "bfloat16":
            raise TypeError("DataLoader: bfloat16 tensors cannot be collated; cast to float32")
        return np.array(x.numpy(), order="C", copy=True)
    return x


def default_collate_fn(batch):
    """Stacks a list of samples into a batch (Paddle's default_collate_fn): arrays and tensors
    stack along a new axis 0, numbers become a 1-D array, dicts collate per key, tuples/lists
    per field; strings stay a list. Arrays become oar Tensors in the main process."""
    return loader_output(collate_numpy(batch))


def collate_numpy(batch):
    """default_collate_fn's structure with NumPy leaves (what workers run)."""
    if not batch:
        raise ValueError("default_collate_fn: got an empty batch")
    elem = batch[0]
    if isinstance(elem, (np.ndarray, _C.Tensor)):
        arrs = [np.asarray(_np(b)) for b in batch]
        shapes = {a.shape for a in arrs}
        if len(shapes) > 1:
            raise ValueError(
                f"default_collate_fn: samples have different shapes {sorted(shapes)}; "
                "pass a collate_fn that pads them"
            )
        return np.stack(arrs)
    if isinstance(elem, (bool, np.bool_)):
        return np.array(batch, dtype=np.bool_)
    if isinstance(elem, (numbers.Number, np.number)):
        return np.array(batch)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {k: collate_numpy([d[k] for d in batch]) for k in elem}
    if isinstance(elem, collections.abc.Sequence):
        n = len(elem)
        if any(len(b) != n for b in batch):
            raise ValueError(
                "default_collate_fn: samples in a batch have different numbers of fields"
            )
        return [collate_numpy(list(f)) for f in zip(*batch)]
    raise TypeError(
        f"default_collate_fn: cannot collate samples of type {type(elem).__name__}; "
        "pass a collate_fn"
    )


def default_convert_fn(sample):
    """batch_size=None: converts a sample's arrays to Tensors without batching."""
    return loader_output(_map(sample, _np))


def _map(obj, fn):
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_map(v, fn) for v in obj)
    return fn(obj)


def _tensor_kind(a):
    return a.dtype.kind in "biufc"


def loader_output(obj):
    """What a DataLoader yields for a batch (or a collate_fn's result), as Paddle: numeric
    NumPy arrays become Tensors, every list or tuple (named tuples too) becomes a list,
    mappings become dicts; other leaves (numbers, strings, NumPy scalars) are kept."""
    if isinstance(obj, np.ndarray):
        return _C.to_tensor(obj, None, None, True) if _tensor_kind(obj) else obj
    if isinstance(obj, collections.abc.Mapping):
        return {k: loader_output(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [loader_output(v) for v in obj]
    return obj


# ---- shared-memory transport
class _ArrayRef:
    """Where an array lives inside a batch's shared-memory block (or, without shared
    memory, the array itself in `data`, pickled through the queue)."""

    __slots__ = ("data", "dtype", "offset", "shape", "tensor")

    def __init__(self, offset, shape, dtype, tensor, data=None):
        self.offset, self.shape, self.dtype, self.tensor = offset, shape, dtype, tensor
        self.data = data


_SHM_DIR = (
    "/dev/shm"
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
    else tempfile.gettempdir()
)
_counter = itertools.count()


def pack(obj, use_shared_memory=True):
    """Worker side: moves every array of `obj` into one shared-memory file. Returns
    (file path or None, structure with _ArrayRef leaves) to send through a queue."""
    arrays = []

    def collect(x):
        is_tensor = isinstance(x, _C.Tensor)
        if is_tensor:
            x = _np(x)
        if isinstance(x, np.ndarray) and x.dtype != object:
            if not use_shared_memory:
                return _ArrayRef(None, None, None, is_tensor, data=x)
            arrays.append(np.asarray(x, order="C"))
            return _ArrayRef(len(arrays) - 1, None, None, is_tensor)
        return x

    struct = _map(obj, collect)
    if not arrays:
        return None, struct
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += (a.nbytes + 63) // 64 * 64
    path = os.path.join(_SHM_DIR, f"oar_dl_{os.getpid()}_{next(_counter)}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        try:  # reserve the space now: a full /dev/shm would otherwise SIGBUS on write
            os.posix_fallocate(fd, 0, max(total, 1))
        except OSError as e:
            raise OSError(
                e.errno,
                f"DataLoader: cannot reserve {total} bytes in {_SHM_DIR} for a batch "
                f"({e.strerror}); enlarge it or pass use_shared_memory=False",
            ) from None
        with mmap.mmap(fd, max(total, 1)) as mm:
            for a, off in zip(arrays, offsets):
                if a.nbytes:
                    mm[off : off + a.nbytes] = a.reshape(-1).view(np.uint8).data
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)

    def ref(x):
        if isinstance(x, _ArrayRef):
            a = arrays[x.offset]
            x.offset, x.shape, x.dtype = offsets[x.offset], a.shape, a.dtype.str
        return x

    return path, _map(struct, ref)


def unpack(path, struct):
    """Main side: rebuilds the structure from the shared-memory file, then deletes the file,
    and returns it as loader_output does (numeric arrays as Tensors, sequences as lists)."""
    if path is None:

        def inline(x):
            if isinstance(x, _ArrayRef):  # numeric arrays: loader_output below
                return _C.to_tensor(x.data, None, None, True) if x.tensor else x.data
            return x

        return loader_output(_map(struct, inline))
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
        os.unlink(path)
    try:

        def load(x):
            if isinstance(x, _ArrayRef):
                dt = np.dtype(x.dtype)
                n = int(np.prod(x.shape)) if x.shape else 1
                a = np.frombuffer(mm, dtype=dt, count=n, offset=x.offset).reshape(x.shape)
                if x.tensor or _tensor_kind(a):
                    return _C.to_tensor(a, None, None, True)  # copies out of the mapping
                return a.copy()
            return x

        return loader_output(_map(struct, load))
    finally:
        mm.close()


def discard_worker_files(pid):
    """Deletes every batch file a (finished) worker process left behind."""
    prefix = f"oar_dl_{pid}_"
    try:
        names = os.listdir(_SHM_DIR)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            discard(os.path.join(_SHM_DIR, name))


def discard(path):
    """Deletes a shared-memory file whose batch will never be consumed."""
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
