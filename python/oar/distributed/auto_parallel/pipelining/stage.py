"""PipelineStage: one stage's layer, and the sends/receives of its micro-batches."""
import numpy as np

from ... import communication as comm
from ...collective import get_rank

_DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "uint8", "int8", "int16",
           "complex64", "complex128"]


def _oar():
    import oar
    return oar


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class PipelineStage:
    """Stage `stage_index` of `num_stages`: runs `layer` on what the previous stage sends
    (the model's inputs for the first stage) and sends its outputs (Tensors, or a tuple of
    them) to the next one. Stage i is rank i of `group` (default: the global ranks)."""

    def __init__(self, layer, stage_index, num_stages, group=None):
        op = "PipelineStage"
        oar = _oar()
        if not isinstance(layer, oar.nn.Layer):
            raise TypeError(f"{op}: layer must be an nn.Layer, got {type(layer).__name__}")
        for name, v in (("stage_index", stage_index), ("num_stages", num_stages)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{op}: {name} must be an int, got {v!r}")
        if num_stages < 1 or not 0 <= stage_index < num_stages:
            raise ValueError(f"{op}: stage_index {stage_index} must be in [0, num_stages={num_stages})")
        ranks = list(group.ranks) if group is not None else list(range(num_stages))
        if len(ranks) != num_stages:
            raise ValueError(f"{op}: the group has {len(ranks)} ranks for {num_stages} stages")
        if ranks[stage_index] != get_rank():
            raise ValueError(f"{op}: stage {stage_index} runs on rank {ranks[stage_index]}, "
                             f"but this is rank {get_rank()}")
        self.submod, self.stage_index, self.num_stages, self.group = layer, stage_index, num_stages, group
        self._ranks = ranks
        # One group per direction: a group completes its point-to-point ops in issue order, so
        # activations going forward must not queue behind gradients coming back (or a
        # receive whose size is still unknown would wait behind a send that needs the peer to
        # get past that very receive). Every rank builds a stage, so every rank makes both.
        from ...collective import is_initialized, new_group
        self._fwd = self._bwd = group
        if num_stages > 1 and is_initialized():
            self._fwd, self._bwd = new_group(ranks), new_group(ranks)
        self._inputs, self._outputs, self._pending = {}, {}, []

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1

    # ---- point to point: a header (count, then dtype code, rank, dims per tensor), then data
    def _send(self, tensors, to_stage, group):
        oar = _oar()
        header = [len(tensors)]
        for t in tensors:
            header += [_DTYPES.index(str(t.dtype).replace("paddle.", "")), len(t.shape), *t.shape]
        head = oar.to_tensor(np.array(header, dtype=np.int64))
        size = oar.to_tensor(np.array([len(header)], dtype=np.int64))
        dst = self._ranks[to_stage]
        for t in [size, head] + [t.detach() if t.is_contiguous() else t.detach().clone() for t in tensors]:
            self._pending.append((comm.isend(t, dst, group), t))  # kept alive until waited

    def _recv(self, from_stage, group):
        oar = _oar()
        src = self._ranks[from_stage]
        size = oar.zeros([1], dtype="int64")
        comm.recv(size, src, group)
        head = oar.zeros([int(size.numpy()[0])], dtype="int64")
        comm.recv(head, src, group)
        h, out, i = head.numpy().tolist(), [], 1
        for _ in range(h[0]):
            dtype, ndim = _DTYPES[h[i]], h[i + 1]
            shape = h[i + 2:i + 2 + ndim]
            i += 2 + ndim
            t = oar.zeros(shape, dtype=dtype)
            comm.recv(t, src, group)
            out.append(t)
        return out

    def wait_sends(self):
        for task, _ in self._pending:
            if task is not None:
                task.wait()
        self._pending.clear()

    # ---- one micro-batch
    def forward_one_chunk(self, mb, args):
        """Runs micro-batch `mb`: the first stage on `args`, the others on what they receive;
        sends the output on (the last stage keeps it for the loss)."""
        if self.is_first:
            inputs = _as_list(args)
        else:
            inputs = self._recv(self.stage_index - 1, self._fwd)
            for t in inputs:
                if t.dtype in (_oar().float32, _oar().float64, _oar().float16, _oar().bfloat16):
                    t.stop_gradient = False
        out = self.submod(*inputs)
        self._inputs[mb], self._outputs[mb] = inputs, out
        if not self.is_last:
            self._send(_as_list(out), self.stage_index + 1, self._fwd)
        return out

    def backward_one_chunk(self, mb, loss=None):
        """Back-propagates micro-batch `mb`: from `loss` on the last stage, else from the
        output gradients the next stage sends; sends the input gradients back."""
        oar = _oar()
        outs = _as_list(self._outputs.pop(mb))
        if self.is_last:
            if loss is None:
                raise RuntimeError(f"PipelineStage: the last stage needs the loss of micro-batch {mb}")
            loss.backward()
        else:
            grads = self._recv(self.stage_index + 1, self._bwd)
            pairs = [(o, g) for o, g in zip(outs, grads) if not o.stop_gradient]
            if pairs:
                oar.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        inputs = self._inputs.pop(mb)
        if not self.is_first:
            self._send([t.grad if t.grad is not None else oar.zeros_like(t) for t in inputs],
                       self.stage_index - 1, self._bwd)
