"""What DistModel's compiled steps share (Note [DistModel] in docs/notes/distributed.md): the
program a step compiles to and runs on the executor (CompiledStep), the optimizers whose update
goes into the program, their states, and the update's trace as dist.<rule>_update ops. The
step itself is traced into the global program and cut to this rank by the static passes
(static_global.py; pipelines: static_pipeline.py)."""
from ... import _C
from ...jit.api import _unflatten
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
    # a handle of its own: the executor may return one tensor for several outputs (another
    # stage's empty gradients), and each output gets its own dist metadata
    return _attach(_C.dist.local_value(local), mesh, _encode_all(placements, "DistModel"), shape)


def _replicated(t):
    """t resharded to Replicate on its mesh (an all_reduce / all_gather in the program)."""
    from .api import reshard
    if not t.is_dist() or all(p.is_replicated() for p in t.placements):
        return t
    return reshard(t, t.process_mesh, [Replicate() for _ in t.placements])


def fused_optimizer(optimizer):
    """The optimizer whose update DistModel records into the program (dist.<rule>_update
    ops), or None where it steps eagerly on the program's gradients: the fused rules of
    oar.optimizer (SGD, Momentum, Adam, AdamW, Adamax, Adagrad, Adadelta, RMSProp, Lamb,
    NAdam, RAdam, Rprop, ASGD), alone or under a ShardingStage (Note [DistModel])."""
    from ...optimizer import optimizer as fused
    from ...optimizer import optimizer_more as fused_more
    inner = getattr(optimizer, "_inner_opt", optimizer)
    update = getattr(type(inner), "_update", None)
    return inner if update is not None and update.__module__ in (fused.__name__, fused_more.__name__) else None


def _state_names(opt, sharded):
    """The optimizer's accumulators the update reads, created now (outside the trace) so the
    program reads them as parameters: [(name, tensor)]. A ShardingStage1/2 parameter's
    states cover its slice: created while it is laid out split, as its step does."""
    from .api import _relayout
    names = [a for a in opt._acc_names if a != "mean_grad" or getattr(opt, "_centered", False)]
    plan = getattr(sharded, "_plan", {})
    out = []
    for i, p in enumerate(opt._parameter_list):
        if p.stop_gradient:
            continue
        missing = [a for a in names if id(p) not in opt._accumulators.get(a, {})]
        if missing and id(p) in plan:
            _relayout(p, plan[id(p)][0])
            try:
                for a in missing:
                    opt._accumulator(a, p)
            finally:
                _relayout(p, plan[id(p)][1])
        for a in names:
            out.append((f"opt{i}.{a}", opt._accumulator(a, p)))
    return out


class CompiledStep:
    """One signature's program: `program` (op dialect, the dist.* collectives and update ops
    visible) and the executor running its lowered copy. Inputs: the step's tensors, then
    with `updates` the learning rate and the step count, then the merged gradients
    (`acc`: (parameter name, local dims, dtype)). Outputs: the step's results, then (train
    without updates) the gradients of `grad_params` in their parameters' layouts."""

    def __init__(self, program, out_struct, metas, grad_params, opt_state, updates, acc, place):
        self.program = program
        self.out_struct = out_struct
        self.metas = metas
        self.grad_params = grad_params
        self.opt_state = opt_state
        self.updates = updates
        self.acc = acc
        self.executed_program = program.run_pipeline("jit-train", lower_copy=True, place=place)
        self.num_collectives = _C.distributed.lower_collectives(self.executed_program)
        self.executor = _pir.Executor(self.executed_program, place)

    def run(self, args, state):
        """(the step's results, the gradients of grad_params), as the eager step's tensors."""
        named = {n: _local(t) for n, t in state}
        named.update(self.opt_state)
        outs = self.executor.run([_local(t) for t in args], named)
        outs = [_wrap(o, m) for o, m in zip(outs, self.metas)]
        n = len(outs) - len(self.grad_params)
        return _unflatten(self.out_struct, outs[:n]), outs[n:]


def _trace_update(opt, grads, merged, lr_t, step_t, skip=None):
    """Records `opt`'s update on the traced gradients (plus `merged`: id(param) -> the
    gradient in .grad) as dist.<rule>_update ops: the fused-update bindings hand it to
    the tracer (update_ops.cc) while the update inputs are set. (A ShardingStage1/2 update
    on slices is static_global._trace_sharded_update's annotations around it.) The learning rate is 1
    while tracing, so each parameter's rate in the op is its multiplier of the lr input. `skip`:
    a traced bool (GradScaler's found_inf) that leaves everything as it is when true."""
    from ...autograd import no_grad
    from .static_pipeline import hint, hinted
    ids = {id(p) for p in opt._parameter_list}
    by_param = {id(p): (p, g) for _, p, g in grads if id(p) in ids}
    pairs = []
    with no_grad():
        for p in opt._parameter_list:
            g = by_param.get(id(p), (p, None))[1]
            a = merged.get(id(p))
            if g is not None and a is not None:  # the merged gradient stays on its stage (clipping reads it)
                lay = hinted(g) or hinted(a)
                g = a + g
                if lay is not None:
                    hint(g, lay)
            else:
                g = a if g is None else g
            if g is not None and not p.stop_gradient:
                pairs.append((p, g))
    saved = opt._learning_rate, opt._step_count, dict(opt._step_lag)  # the recording call moves them
    opt._learning_rate = 1.0
    _C.distributed.set_update_inputs(lr_t, step_t, skip)
    try:
        opt._apply_pairs(pairs)
    finally:
        _C.distributed.set_update_inputs(None, None)
        opt._learning_rate, opt._step_count, opt._step_lag = saved
