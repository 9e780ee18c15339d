"""Pipeline schedules over one stage per process: FThenB (all forwards, then all
backwards) and 1F1B (a warm-up of forwards, then one forward and one backward in turn).
Every stage walks the same micro-batch order, sends are asynchronous and receives blocking,
so neighbouring stages cannot wait on each other in a cycle."""
from .stage import PipelineStage


def _split(x, n, what):
    import oar
    if x is None:
        return [None] * n
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"pipeline schedule: {what} must be a Tensor, got {type(x).__name__}")
    if not x.shape or x.shape[0] % n:
        raise ValueError(f"pipeline schedule: {what} of shape {list(x.shape)} does not split into "
                         f"{n} micro-batches along dim 0")
    return oar.split(x, n, axis=0)


class _Schedule:
    def __init__(self, stage, n_microbatches, loss_fn=None):
        if not isinstance(stage, PipelineStage):
            raise TypeError(f"{type(self).__name__}: stage must be a PipelineStage, got {type(stage).__name__}")
        if isinstance(n_microbatches, bool) or not isinstance(n_microbatches, int) or n_microbatches < 1:
            raise ValueError(f"{type(self).__name__}: n_microbatches must be a positive int, got {n_microbatches!r}")
        self._stage, self._n, self._loss_fn = stage, n_microbatches, loss_fn
        self._losses = []

    def step(self, *args, target=None, losses=None, return_output=False):
        """One iteration over the whole batch: split into micro-batches along dim 0 (inputs
        on the first stage, `target` on the last), forward and (with a loss_fn) backward by
        the schedule. Gradients accumulate over the micro-batches, as Paddle's schedules do:
        a loss_fn that averages over a micro-batch should divide by n_microbatches to get the
        whole batch's mean. `losses` receives each micro-batch's loss on the last stage."""
        import oar
        st, n = self._stage, self._n
        if st.is_first and not args:
            raise ValueError(f"{type(self).__name__}.step: the first stage needs the model's inputs")
        if st.is_last and self._loss_fn is not None and target is None:
            raise ValueError(f"{type(self).__name__}.step: the last stage needs target= for loss_fn")
        chunks = [_split(a, n, f"input {i}") for i, a in enumerate(args)]
        arg_mbs = [tuple(c[m] for c in chunks) for m in range(n)]
        target_mbs = _split(target, n, "target") if st.is_last else [None] * n
        self._losses, outputs = [], []
        try:
            self._run(arg_mbs, target_mbs, outputs)
        finally:
            st.wait_sends()
        if losses is not None and st.is_last:
            losses.clear()
            losses.extend(self._losses)
        if return_output and st.is_last:
            return oar.concat(outputs, axis=0) if isinstance(outputs[0], oar.Tensor) else outputs
        return None

    def _forward(self, m, arg_mbs, target_mbs, outputs):
        out = self._stage.forward_one_chunk(m, arg_mbs[m])
        if self._stage.is_last:
            outputs.append(out.detach() if hasattr(out, "detach") else out)
            if self._loss_fn is not None:
                self._losses.append(self._loss_fn(out, target_mbs[m]))

    def _backward(self, m):
        self._stage.backward_one_chunk(m, self._losses[m] if self._stage.is_last else None)


class ScheduleFThenB(_Schedule):
    """Every micro-batch's forward, then every backward (fill, drain)."""

    def _run(self, arg_mbs, target_mbs, outputs):
        for m in range(self._n):
            self._forward(m, arg_mbs, target_mbs, outputs)
        if self._loss_fn is None:
            return
        for m in range(self._n):
            self._backward(m)


class Schedule1F1B(_Schedule):
    """num_stages - stage_index - 1 warm-up forwards, then one forward and one backward in
    turn, then the remaining backwards: at most num_stages micro-batches in flight."""

    def _run(self, arg_mbs, target_mbs, outputs):
        st, n = self._stage, self._n
        if self._loss_fn is None:
            for m in range(n):
                self._forward(m, arg_mbs, target_mbs, outputs)
            return
        warmup = min(n, st.num_stages - st.stage_index - 1)
        for m in range(warmup):
            self._forward(m, arg_mbs, target_mbs, outputs)
        for m in range(warmup, n):
            self._forward(m, arg_mbs, target_mbs, outputs)
            self._backward(m - warmup)
        for m in range(n - warmup, n):
            self._backward(m)
