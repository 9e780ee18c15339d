"""DataParallel: replicated training over a process group (Paddle's paddle.DataParallel).

Parameters are broadcast from the group's first rank when the wrapper is made. During backward
each parameter's post-accumulate hook (paddle_core/autograd/accumulate_hooks.h) marks it ready;
a bucket (parameters of one dtype, about comm_buffer_size MB, in reverse order of definition,
which is roughly the order backward produces them) is all-reduced (AVG) on the group's worker
thread as soon as all its parameters are ready, while backward goes on. Buckets are issued in
index order on every rank, so ranks whose gradients arrive in different orders still match.
The hook that issues the last bucket waits for all of them and writes the averaged gradients
back into .grad. See Note [DataParallel buckets] in docs/notes/distributed.md."""
import contextlib
import weakref

from .. import _C
from ..nn.layer import Layer
from . import collective
from .communication import broadcast

__all__ = ["DataParallel", "sync_params_buffers"]


def sync_params_buffers(layer, group=None, src_rank=None):
    """Overwrites every parameter and buffer of `layer` with the group's first rank's."""
    import oar
    group = collective._resolve(group, "DataParallel")
    src = group.ranks[0] if src_rank is None else src_rank
    with oar.no_grad():
        for t in list(layer.parameters()) + list(layer.buffers()):
            broadcast(t, src, group)


def _flatten_tensors(obj, out):
    import oar
    if isinstance(obj, oar.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _flatten_tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _flatten_tensors(o, out)
    return out


class _Reducer:
    def __init__(self, params, group, bucket_bytes, first_bucket_bytes, find_unused):
        self.params = params
        self.group = group
        self.find_unused = find_unused
        self.buckets = []  # lists of parameter indices
        # Paddle's rule (AssignGroupBySize), as torch DDP's: a bucket closes once it holds at
        # least its cap, so the first one (the last layers') is issued while backward still
        # runs through the earlier layers. A dtype change closes it too.
        cur, cur_bytes, cap = [], 0, first_bucket_bytes
        for i in reversed(range(len(params))):
            p = params[i]
            if cur and p.dtype != params[cur[0]].dtype:
                self.buckets.append(cur)
                cur, cur_bytes, cap = [], 0, bucket_bytes
            cur.append(i)
            cur_bytes += p.size * p.dtype.itemsize
            if cur_bytes >= cap:
                self.buckets.append(cur)
                cur, cur_bytes, cap = [], 0, bucket_bytes
        if cur:
            self.buckets.append(cur)
        self.flats = [None] * len(self.buckets)  # each bucket's flat buffer, kept across steps
        self.bucket_of = {}
        for b, idx in enumerate(self.buckets):
            for i in idx:
                self.bucket_of[i] = b
        me = weakref.ref(self)  # the hooks must not keep the reducer (and the params) alive

        def make_hook(i):
            def hook(_leaf):
                r = me()
                if r is not None:
                    r._on_grad(i)
            return hook
        self.hook_ids = [_C.distributed.register_post_accumulate_hook(p, make_hook(i))
                         for i, p in enumerate(params)]
        self.active = False

    def remove_hooks(self):
        for h in self.hook_ids:
            _C.distributed.remove_post_accumulate_hook(h)
        self.hook_ids = []

    def prepare_for_backward(self, outputs):
        if self.active and any(self.ready_count):
            missing = [self.params[i].name for b in range(len(self.buckets))
                       for i in self.buckets[b] if not self.is_ready[i]]
            raise RuntimeError(
                "DataParallel: the previous backward did not produce gradients for parameters "
                f"{missing[:10]}{' ...' if len(missing) > 10 else ''}, so their buckets were never "
                "all-reduced. Pass find_unused_parameters=True when some parameters take no part "
                "in the loss")
        self.active = True
        self.is_ready = [False] * len(self.params)
        self.ready_count = [0] * len(self.buckets)
        self.next_bucket = 0
        self.pending = []  # (bucket, flat gradient, task)
        if self.find_unused:
            used = _C.distributed.reachable_leaves(_flatten_tensors(outputs, []), self.params)
            for i, u in enumerate(used):
                if not u:
                    self._on_grad(i)

    def _on_grad(self, i):
        if not self.active or self.is_ready[i]:
            return
        self.is_ready[i] = True
        b = self.bucket_of[i]
        self.ready_count[b] += 1
        # Issue buckets strictly in index order: every rank must issue the same sequence.
        while (self.next_bucket < len(self.buckets)
               and self.ready_count[self.next_bucket] == len(self.buckets[self.next_bucket])):
            self._launch(self.next_bucket)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finish()

    def _launch(self, b):
        import oar
        grads = []
        for i in self.buckets[b]:
            p = self.params[i]
            g = p.grad
            if g is None:
                g = oar.zeros(p.shape, dtype=p.dtype)
            elif not g.is_contiguous():
                g = g.contiguous()
            grads.append(g)
        if not grads[0].place.is_cpu_place():
            # A device's gradients: concatenated and averaged by the backend on its stream.
            with oar.no_grad():
                flat = oar.concat([g.reshape([-1]) for g in grads]) if len(grads) > 1 else grads[0].clone()
            task = self.group.process_group.all_reduce(flat, collective.ReduceOp.AVG, False)
            self.pending.append((b, flat, task))
            return
        flat = self.flats[b]
        if flat is None:
            flat = self.flats[b] = oar.empty([sum(g.size for g in grads)], dtype=grads[0].dtype)
        _C.distributed.bucket_pack(flat, grads)
        # SUM here, the division by the group's size in bucket_unpack: one pass fewer than AVG.
        task = self.group.process_group.all_reduce(flat, collective.ReduceOp.SUM, False)
        self.pending.append((b, flat, task))

    def _finish(self):
        import oar
        self.active = False
        pending, self.pending = self.pending, []
        for b, flat, task in pending:
            task.wait()
            if flat is not self.flats[b]:  # a device bucket, averaged already
                with oar.no_grad():
                    offset = 0
                    for i in self.buckets[b]:
                        p = self.params[i]
                        n = p.size
                        chunk = flat[offset:offset + n].reshape(p.shape)
                        offset += n
                        if p.grad is None:
                            p.grad = chunk.clone()
                        else:
                            p.grad._copy_from(chunk)
                continue
            grads = []
            for i in self.buckets[b]:
                p = self.params[i]
                if p.grad is None or not p.grad.is_contiguous():
                    p.grad = oar.zeros(p.shape, dtype=p.dtype)
                grads.append(p.grad)
            _C.distributed.bucket_unpack(flat, grads, self.group.nranks)


class DataParallel(Layer):
    """Wraps `layers` for data-parallel training on `group` (the default group when None).
    comm_buffer_size / last_comm_buffer_size: bucket sizes in MB (the bucket issued first,
    holding the last parameters, is the small one so communication starts early)."""

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: layers must be an oar.nn.Layer, got {type(layers).__name__}")
        if comm_buffer_size <= 0 or last_comm_buffer_size <= 0:
            raise ValueError("DataParallel: comm_buffer_size and last_comm_buffer_size must be > 0 "
                             f"(MB), got {comm_buffer_size} and {last_comm_buffer_size}")
        self._layers = layers
        self.find_unused_parameters = find_unused_parameters
        self._grad_need_sync = True
        self._reducer = None
        if group is None and not collective.is_initialized() and collective.get_world_size() == 1:
            # A job of one without init_parallel_env: a plain wrapper, as in Paddle.
            self._group = None
            return
        self._group = collective._resolve(group, "DataParallel")
        if self._group.nranks > 1 and self._group.is_member():
            sync_params_buffers(layers, self._group)
            params = [p for p in layers.parameters() if not p.stop_gradient]
            self._reducer = _Reducer(params, self._group, int(comm_buffer_size * 2**20),
                                     int(last_comm_buffer_size * 2**20), find_unused_parameters)

    def forward(self, *inputs, **kwargs):
        from .. import _trace_state
        outputs = self._layers(*inputs, **kwargs)
        if not _trace_state.active:  # converted: each run's outputs (_after_converted_forward)
            self._after_converted_forward(outputs)
        return outputs

    def _after_converted_forward(self, outputs):
        """Readies the reducer for the backward of `outputs` (the eager forward's, or each
        run of a to_static program of this layer: StaticFunction.__call__ calls this)."""
        import oar
        if self._reducer is not None and self._grad_need_sync and oar.is_grad_enabled():
            self._reducer.prepare_for_backward(outputs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside skips the all-reduce: gradients accumulate locally and are averaged
        by the first backward after it (gradient accumulation)."""
        old, self._grad_need_sync = self._grad_need_sync, False
        try:
            yield
        finally:
            self._grad_need_sync = old

    def scale_loss(self, loss):
        """Kept for Paddle's older code: the all-reduce averages, so the loss is unchanged."""
        return loss

    def state_dict(self, *args, **kwargs):
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self._layers.set_state_dict(*args, **kwargs)

    set_dict = set_state_dict
    load_dict = set_state_dict

    def __del__(self):
        r = self.__dict__.get("_reducer")
        if r is not None:
            r.remove_hooks()
