"""Collectives with Paddle's signatures (paddle.distributed.all_reduce, ...).

Tensor ranks in arguments (src, dst) are global ranks, as in Paddle; the C++ groups take
group ranks. Each call returns a Task; with sync_op=False the op runs on the group's worker
thread and the results (lists to fill, copies back into non-contiguous tensors) land when
wait() returns. On a process outside `group` the calls do nothing and return None."""
import pickle

import numpy as np

from .collective import ReduceOp, _resolve

__all__ = ["all_reduce", "all_gather", "all_gather_object", "reduce_scatter", "broadcast",
           "broadcast_object_list", "reduce", "scatter", "alltoall", "send", "recv", "isend",
           "irecv", "barrier", "Task"]

_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.AVG)


class Task:
    """An issued collective (Paddle's task): wait() blocks until it finished and raises its error."""

    def __init__(self, task, after=None):
        self._task = task
        self._after = after

    def wait(self, timeout=None):
        """Waits (at most `timeout` seconds when given) and finishes the call's Python side."""
        self._task.wait(0.0 if timeout is None else float(timeout))
        if self._after is not None:
            after, self._after = self._after, None
            after()
        return True

    def is_completed(self):
        return self._task.is_completed()


def _issue(task, sync_op, after=None):
    t = Task(task, after)
    if sync_op:
        t.wait()
    return t


def _oar():
    import oar  # the package imports this module: import lazily
    return oar


def _check_tensor(op, arg, t):
    if not isinstance(t, _oar().Tensor):
        raise TypeError(f"{op}: {arg} must be an oar.Tensor, got {type(t).__name__}")


def _check_op(op, reduce_op):
    if reduce_op not in _OPS:
        raise ValueError(f"{op}: op must be one of ReduceOp.SUM/MAX/MIN/PROD/AVG, got {reduce_op!r}")
    return int(reduce_op)


def _group_rank(op, group, rank, arg):
    r = group.get_group_rank(int(rank))
    if r < 0:
        raise ValueError(f"{op}: {arg}={rank} is not a member of the group (global ranks {group.ranks})")
    return r


def _contiguous(t):
    return t if t.is_contiguous() else t.clone()


def _inplace(op, tensor, run, sync_op):
    """Runs `run(buffer)` on a contiguous buffer for `tensor`, copying back when they differ."""
    _check_tensor(op, "tensor", tensor)
    buf = _contiguous(tensor)
    task = run(buf)
    return _issue(task, sync_op, None if buf is tensor else (lambda: tensor._copy_from(buf)))


def _stack(op, arg, tensors, group):
    """A list of group.nranks tensors (or one tensor holding them) as one contiguous tensor."""
    oar = _oar()
    if isinstance(tensors, oar.Tensor):
        return _contiguous(tensors)
    if not isinstance(tensors, (list, tuple)) or len(tensors) != group.nranks:
        n = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{op}: {arg} must hold one tensor per rank ({group.nranks}), got {n}")
    for t in tensors:
        _check_tensor(op, arg, t)
    shapes = {tuple(t.shape) for t in tensors}
    dtypes = {t.dtype for t in tensors}
    if len(shapes) != 1 or len(dtypes) != 1:
        raise ValueError(f"{op}: the tensors in {arg} must share shape and dtype, got "
                         f"shapes {sorted(shapes)} and dtypes {sorted(map(str, dtypes))}")
    return oar.stack(list(tensors))


def _fill_list(op, out_list, flat, n):
    """Puts the n chunks of `flat` into out_list: appended when it is empty (Paddle), copied
    into its tensors otherwise."""
    chunks = [flat[i] for i in range(n)]
    if len(out_list) == 0:
        out_list.extend(chunks)
        return
    if len(out_list) != n:
        raise ValueError(f"{op}: the output list has {len(out_list)} tensors, the group {n} ranks")
    for dst, src in zip(out_list, chunks):
        dst._copy_from(src)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    g = _resolve(group, "all_reduce")
    if not g.is_member():
        return None
    code = _check_op("all_reduce", op)
    return _inplace("all_reduce", tensor, lambda b: g.process_group.all_reduce(b, code, sync_op), sync_op)


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    oar = _oar()
    g = _resolve(group, "all_gather")
    if not g.is_member():
        return None
    _check_tensor("all_gather", "tensor", tensor)
    src = _contiguous(tensor)
    if isinstance(tensor_list, oar.Tensor):  # one tensor: the ranks' tensors concatenated on axis 0
        return _inplace("all_gather", tensor_list,
                        lambda b: g.process_group.all_gather(b, src, sync_op), sync_op)
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather: tensor_list must be a list, got {type(tensor_list).__name__}")
    out = oar.empty([g.nranks] + list(tensor.shape), dtype=tensor.dtype)
    task = g.process_group.all_gather(out, src, sync_op)
    return _issue(task, sync_op, lambda: _fill_list("all_gather", tensor_list, out, g.nranks))


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group=None, sync_op=True):
    g = _resolve(group, "reduce_scatter")
    if not g.is_member():
        return None
    code = _check_op("reduce_scatter", op)
    src = _stack("reduce_scatter", "tensor_list", tensor_list, g)
    return _inplace("reduce_scatter", tensor,
                    lambda b: g.process_group.reduce_scatter(b, src, code, sync_op), sync_op)


def broadcast(tensor, src, group=None, sync_op=True):
    g = _resolve(group, "broadcast")
    if not g.is_member():
        return None
    root = _group_rank("broadcast", g, src, "src")
    return _inplace("broadcast", tensor, lambda b: g.process_group.broadcast(b, root, sync_op), sync_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, sync_op=True):
    g = _resolve(group, "reduce")
    if not g.is_member():
        return None
    root = _group_rank("reduce", g, dst, "dst")
    code = _check_op("reduce", op)
    return _inplace("reduce", tensor, lambda b: g.process_group.reduce(b, root, code, sync_op), sync_op)


def scatter(tensor, tensor_list=None, src=0, group=None, sync_op=True):
    g = _resolve(group, "scatter")
    if not g.is_member():
        return None
    root = _group_rank("scatter", g, src, "src")
    whole = _stack("scatter", "tensor_list", tensor_list, g) if g.rank == root else None
    return _inplace("scatter", tensor,
                    lambda b: g.process_group.scatter(b, whole, root, sync_op), sync_op)


def alltoall(out_tensor_list, in_tensor_list, group=None, sync_op=True):
    oar = _oar()
    g = _resolve(group, "alltoall")
    if not g.is_member():
        return None
    src = _stack("alltoall", "in_tensor_list", in_tensor_list, g)
    if isinstance(out_tensor_list, oar.Tensor):
        return _inplace("alltoall", out_tensor_list,
                        lambda b: g.process_group.alltoall(b, src, sync_op), sync_op)
    if not isinstance(out_tensor_list, list):
        raise TypeError(f"alltoall: out_tensor_list must be a list, got {type(out_tensor_list).__name__}")
    out = oar.empty(list(src.shape), dtype=src.dtype)
    task = g.process_group.alltoall(out, src, sync_op)
    return _issue(task, sync_op, lambda: _fill_list("alltoall", out_tensor_list, out, g.nranks))


def send(tensor, dst=0, group=None, sync_op=True):
    g = _resolve(group, "send")
    if not g.is_member():
        return None
    _check_tensor("send", "tensor", tensor)
    peer = _group_rank("send", g, dst, "dst")
    return _issue(g.process_group.send(_contiguous(tensor), peer, sync_op), sync_op)


def recv(tensor, src=0, group=None, sync_op=True):
    g = _resolve(group, "recv")
    if not g.is_member():
        return None
    peer = _group_rank("recv", g, src, "src")
    return _inplace("recv", tensor, lambda b: g.process_group.recv(b, peer, sync_op), sync_op)


def isend(tensor, dst, group=None):
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor, src=None, group=None):
    if src is None:
        raise ValueError("irecv: src is required (the gloo backend matches messages per sender)")
    return recv(tensor, src, group, sync_op=False)


def barrier(group=None):
    g = _resolve(group, "barrier")
    if g.is_member():
        g.process_group.barrier()


def _bytes_tensor(data):
    return _oar().to_tensor(np.frombuffer(data, dtype=np.uint8).copy())


def all_gather_object(object_list, obj, group=None):
    """Gathers a picklable object from every rank into object_list (replacing its contents).
    Objects are unpickled: use it only within a job you trust (docs/distributed.md)."""
    oar = _oar()
    g = _resolve(group, "all_gather_object")
    if not g.is_member():
        return None
    data = pickle.dumps(obj)
    sizes = []
    all_gather(sizes, oar.to_tensor(np.array([len(data)], dtype=np.int64)), group)
    lengths = [int(s.numpy()[0]) for s in sizes]
    padded = data + bytes(max(lengths) - len(data))
    chunks = []
    all_gather(chunks, _bytes_tensor(padded), group)
    object_list[:] = [pickle.loads(c.numpy().tobytes()[:n]) for c, n in zip(chunks, lengths)]


def broadcast_object_list(object_list, src=0, group=None):
    """Replaces object_list's contents on every rank with src's objects (pickled)."""
    oar = _oar()
    g = _resolve(group, "broadcast_object_list")
    if not g.is_member():
        return None
    is_src = g.get_group_rank(int(src)) == g.rank
    data = pickle.dumps(list(object_list)) if is_src else b""
    size = oar.to_tensor(np.array([len(data)], dtype=np.int64))
    broadcast(size, src, group)
    buf = _bytes_tensor(data) if is_src else oar.empty([int(size.numpy()[0])], dtype="uint8")
    broadcast(buf, src, group)
    if not is_src:
        object_list[:] = pickle.loads(buf.numpy().tobytes())
