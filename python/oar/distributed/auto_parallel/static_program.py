"""DistModel's compiled step: this rank's program (Note [DistModel] in docs/notes/distributed.md).

A step (forward and loss; for train() also the backward, each gradient resharded to its
parameter's layout) is traced once per signature while the dist dispatch layer runs it: the
SPMD rules pick each op's placements, reshard moves the data, and the tracer records every
local op below the layer plus each reshard transfer as a `dist.*` collective op (one per
mesh axis the reshard planner moves: all_reduce, all_gather, reduce_scatter, all_to_all,
shard_slice, partial_init; send_recv between pipeline stages' meshes). The result is this
rank's local program, in Oar's IR, with local shapes and its collectives in order; it runs on
the executor, the collectives over the mesh axes' process groups (Gloo)."""
from ... import _C
from ..._creation import get_rng_state, set_rng_state
from ...jit.api import _flatten, _named_state, _Tracing, _unflatten
from .api import _attach
from .placement_type import Replicate, _encode_all

_pir = _C.pir


def _local(t):
    return t._local_value() if t.is_dist() else t


def _meta(t):
    """What a program output needs to become the tensor the eager step returned."""
    if not t.is_dist():
        return None
    return (t.process_mesh, list(t.placements), list(t.shape))


def _wrap(local, meta):
    local.stop_gradient = True
    if meta is None:
        return local
    mesh, placements, shape = meta
    return _attach(local, mesh, _encode_all(placements, "DistModel"), shape)


def _replicated(t):
    """t resharded to Replicate on its mesh (an all_reduce / all_gather in the program)."""
    from .api import reshard
    if not t.is_dist() or all(p.is_replicated() for p in t.placements):
        return t
    return reshard(t, t.process_mesh, [Replicate() for _ in t.placements])


def _grad_layout(g, p):
    """The gradient in its parameter's layout, Partial axes as Replicate (what the eager
    post-accumulate hook does)."""
    from .api import reshard
    if g is None or not p.is_dist() or not g.is_dist():
        return g
    want = [Replicate() if q.is_partial() else q for q in p.placements]
    if g.process_mesh == p.process_mesh and list(g.placements) == want:
        return g
    return reshard(g, p.process_mesh, want)


class CompiledStep:
    """One signature's program: `program` (op dialect, the dist.* collectives visible) and
    the executor running its lowered copy. Outputs: the step's results, then (train) the
    gradients of `grad_params` in their parameters' layouts."""

    def __init__(self, program, out_struct, metas, grad_params, state_names, place):
        self.program = program
        self.out_struct = out_struct
        self.metas = metas
        self.grad_params = grad_params
        self.state_names = state_names
        self.executed_program = program.run_pipeline("jit-train", lower_copy=True, place=place)
        self.num_collectives = _C.distributed.lower_collectives(self.executed_program)
        self.executor = _pir.Executor(self.executed_program, place)

    def run(self, args, state):
        """(the step's results, the gradients of grad_params), as the eager step's tensors."""
        outs = self.executor.run([_local(t) for t in args], {n: _local(t) for n, t in state})
        outs = [_wrap(o, m) for o, m in zip(outs, self.metas)]
        n = len(outs) - len(self.grad_params)
        return _unflatten(self.out_struct, outs[:n]), outs[n:]


def trace(mode, layer, loss_fn, args, micro, scale, schedule):
    """Traces one step of `mode` on `args` (inputs..., labels for train/eval) into a
    CompiledStep. The tracing run is a real eager step (its collectives run on every rank
    alike); its results are dropped, and the random state is restored, so the first program
    run is the step that counts."""
    import oar
    from ...autograd import enable_grad, no_grad
    from .static_mode import _split

    state = _named_state(layer)
    tracer = _pir.Tracer()
    for i, t in enumerate(args):
        tracer.add_input(t, f"x{i}", list(_local(t).shape))
    for name, t in state:
        tracer.add_parameter(t, name)
    rng = get_rng_state()
    versions = [(n, t, t._version) for n, t in state]
    params = [(n, p) for n, p in layer.named_parameters() if not p.stop_gradient]
    grads = []
    with _Tracing(tracer), (enable_grad() if mode == "train" else no_grad()):
        if mode == "predict":
            result = layer(*args)
        else:
            chunks = [tuple(args)] if micro == 1 else list(zip(*(_split(t, micro) for t in args)))
            parts = []
            acc = [None] * len(params)

            def backward(part):
                if mode != "train" or not params:
                    return
                gs = oar.grad([part * scale if scale != 1.0 else part], [p for _, p in params], allow_unused=True)
                for i, g in enumerate(gs):
                    if g is not None:
                        acc[i] = g if acc[i] is None else acc[i] + g

            for chunk in chunks:  # FThenB: every forward first; otherwise forward, backward per micro-batch
                part = loss_fn(layer(*chunk[:-1]), chunk[-1])
                part = part / micro if micro > 1 else part
                parts.append(part)
                if schedule != "FThenB":
                    backward(part)
            if schedule == "FThenB":
                for part in parts:
                    backward(part)
            with no_grad():  # (detach would drop the dist metadata)
                loss = parts[0]
                for part in parts[1:]:
                    loss = loss + part
                result = _replicated(loss)
            for (name, p), g in zip(params, acc):
                if g is not None:
                    grads.append((name, _grad_layout(g, p)))
    outs = []
    out_struct = _flatten(result, outs)
    if any(not isinstance(t, oar.Tensor) for t in outs):
        raise NotImplementedError("DistModel: the step returns a value that is not a tensor")
    outs += [g for _, g in grads]
    metas = [_meta(t) for t in outs]
    program = tracer.finish(outs)
    set_rng_state(rng)
    for name, t, v in versions:
        if t._version != v:
            raise NotImplementedError(f"DistModel: the step writes into {name!r} (a buffer update such as "
                                      "BatchNorm's running statistics), which the compiled step does not replay")
    place = args[0].place if args else _C._get_current_place()
    return CompiledStep(program, out_struct, metas, [n for n, _ in grads], [n for n, _ in state], place)
