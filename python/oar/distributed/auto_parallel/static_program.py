"""DistModel's trace-time partitioning: a pipeline step's program for this rank (Note [DistModel]
in docs/notes/distributed.md; every other step goes through the global program and the static
passes, static_global.py), and the helpers both ways share (the update's trace, the states).

A step (forward and loss; for train() also the backward, each gradient resharded to its
parameter's layout, and the optimizer's update as dist.<rule>_update ops) is traced once per
signature while the dist dispatch layer runs it: the
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


def _traced_relayout(p, placements):
    """api._relayout that tells the tracer: p now holds the reshard's value."""
    from ...autograd import no_grad
    from .api import reshard
    from ...jit.api import _active
    with no_grad():
        r = reshard(p, p.process_mesh, placements)
        # p takes a copy (made untraced): a version bump of r's own memory would make the
        # tracer's value of r stale
        tracer = _active[-1]
        tracer.stop()
        try:
            local = _C.dist.local_value(r).clone()
        finally:
            tracer.start()
    _C.dist.set_local_value(p, local)
    _C.dist.set_placements(p, _encode_all(placements, "shard_optimizer"), False)
    _C.distributed.trace_alias(p, r)


def schedule_order(schedule, micro, stage, stages):
    """The micro-batches' forwards ("F", i) and backwards ("B", i) in this stage's order:
    FThenB every forward first; 1F1B (stage s of S) S-1-s warm-up forwards, then one
    forward and one backward in turn, then the cool-down backwards; the other modes each
    micro-batch's forward then its backward."""
    if schedule == "FThenB":
        return [("F", i) for i in range(micro)] + [("B", i) for i in range(micro)]
    warm = min(max(stages - 1 - stage, 0), micro) if schedule == "1F1B" else 0
    order = [("F", i) for i in range(warm)]
    for i in range(micro - warm):
        order += [("F", warm + i), ("B", i)]
    return order + [("B", i) for i in range(micro - warm, micro)]


def vpp_order(micro, stage, stages, vpp):
    """The interleaved 1F1B order (VPP) of stage `stage` of `stages`, each holding `vpp`
    virtual stages (chunk j of stage s is the model's chunk j * stages + s): [(kind, micro-batch,
    j)]. Forward k runs chunk (k // stages) % vpp of micro-batch (k // (stages * vpp)) * stages +
    k % stages, backwards the chunks in reverse; stage s warms up with (stages - s - 1) * 2 +
    (vpp - 1) * stages forwards, then alternates one forward and one backward."""
    if micro % stages:
        raise ValueError(f"DistModel: schedule_mode VPP needs accumulate_steps ({micro}) to be a multiple of the "
                         f"number of pipeline stages ({stages})")
    total = micro * vpp

    def unit(kind, k):
        j = (k // stages) % vpp
        return (kind, (k // (stages * vpp)) * stages + k % stages, j if kind == "F" else vpp - 1 - j)
    warm = min((stages - stage - 1) * 2 + (vpp - 1) * stages, total)
    order = [unit("F", k) for k in range(warm)]
    for i in range(total - warm):
        order += [unit("F", warm + i), unit("B", i)]
    return order + [unit("B", k) for k in range(total - warm, total)]


def has_vpp_chunks(layer):
    """Whether `layer` gives VPP chunks: an nn.Sequential, or a layer that lists its chunks
    (`vpp_chunks()`: fleet.meta_parallel.PipelineLayer)."""
    from ...nn import Sequential
    return isinstance(layer, Sequential) or callable(getattr(layer, "vpp_chunks", None))


def vpp_chunks(layer):
    """The model chunks of a VPP pipeline (Note [VPP chunks]): the layer's own list
    (`layer.vpp_chunks()`: PipelineLayer's segments), or for an nn.Sequential consecutive items
    whose parameters lie on one mesh (items without parameters join the chunk before them).
    Returns ([(mesh ids, [items])], the distinct meshes in order)."""
    from ...nn import Sequential
    if not has_vpp_chunks(layer):
        raise NotImplementedError("DistModel: schedule_mode VPP runs an nn.Sequential whose items are the "
                                  "virtual stages in order, or a fleet.meta_parallel.PipelineLayer (got "
                                  f"{type(layer).__name__})")
    chunks = []
    if not isinstance(layer, Sequential):
        chunks = [(ids, list(items)) for ids, items in layer.vpp_chunks()]
    for item in layer if isinstance(layer, Sequential) else ():
        ids = next((tuple(p.process_mesh.process_ids) for p in item.parameters() if p.is_dist()), None)
        if chunks and (ids is None or ids == chunks[-1][0]):
            chunks[-1][1].append(item)
        else:
            chunks.append((ids, [item]))
    meshes = []
    for ids, _ in chunks:
        if ids not in meshes:
            meshes.append(ids)
    for c, (ids, _) in enumerate(chunks):
        if ids is None or ids != meshes[c % len(meshes)]:
            raise ValueError("DistModel: schedule_mode VPP needs the chunks' meshes to repeat in stage order "
                             f"(chunk c on stage c % {len(meshes)}); got chunk meshes {[i for i, _ in chunks]}")
    if len(chunks) % len(meshes):
        raise ValueError(f"DistModel: {len(chunks)} chunks do not divide into {len(meshes)} stages")
    return chunks, meshes


def check_vpp(layer, micro, vpp_degree):
    """vpp_chunks, plus the virtual stages per stage, checked against Strategy.pipeline
    (vpp_degree 1, the default, takes the layer's count) and accumulate_steps."""
    chunks, meshes = vpp_chunks(layer)
    vpp = len(chunks) // len(meshes)
    if vpp_degree > 1 and vpp_degree != vpp:
        raise ValueError(f"DistModel: Strategy.pipeline.vpp_degree is {vpp_degree}, but the layer's {len(chunks)} "
                         f"chunks on {len(meshes)} stages make {vpp} virtual stages per stage")
    if micro % len(meshes):
        raise ValueError(f"DistModel: schedule_mode VPP needs accumulate_steps ({micro}) to be a multiple of the "
                         f"number of pipeline stages ({len(meshes)})")
    return chunks, meshes, vpp


def _leaf(t):
    """A new dist tensor holding t's local value and layout, a graph leaf needing a gradient:
    a chunk's input cut from the chunk before it."""
    from ...autograd import no_grad
    with no_grad():
        local = _C.dist.local_value(t).detach()
    _attach(local, t.process_mesh, _encode_all(list(t.placements), "DistModel"), list(t.shape))
    local.stop_gradient = False
    return local


def _trace_vpp(layer, loss_fn, chunks_in, micro, scale, params, vpp_degree):
    """The traced units of a VPP step on this rank: each of its chunks' forward and backward
    per micro-batch in vpp_order. A forward of chunk c takes a leaf cut from chunk c-1's output
    (the receive: the chunk moves its input to its mesh), then runs chunk c+1 (another rank's:
    its ops are skipped, its input move sends); a backward runs oar.grad from chunk c+1's output
    (receiving its gradient) to that leaf (sending the leaf's gradient back). Returns (the
    micro-batches' replicated losses, the parameters' gradients summed)."""
    import oar
    from ..collective import get_rank
    chunks, meshes, vpp = check_vpp(layer, micro, vpp_degree)
    stages, n = len(meshes), len(chunks)
    me = get_rank()
    stage = next((i for i, ids in enumerate(meshes) if me in ids), 0)

    def run(c, x):
        for item in chunks[c][1]:
            x = item(x)
        return x
    def placeholder(c, i):
        """Chunk c's output of micro-batch i: run (its ops skipped) if no unit made it yet."""
        if (c, i) not in outs:
            outs[(c, i)] = run(c, chunks_in[i][0] if c == 0 else placeholder(c - 1, i))
        return outs[(c, i)]

    def loss(i):
        part = loss_fn(placeholder(n - 1, i), chunks_in[i][-1])
        return _replicated(part / micro if micro > 1 else part)
    index = {id(p): j for j, (_, p) in enumerate(params)}
    owned = [[index[id(p)] for item in chunks[c][1] for p in item.parameters() if id(p) in index] for c in range(n)]
    outs, leaves, parts, acc = {}, {}, [None] * micro, [None] * len(params)
    for kind, i, j in vpp_order(micro, stage, stages, vpp):
        c = j * stages + stage
        if kind == "F":
            if c == 0:
                x = chunks_in[i][0]
            else:
                x = leaves[(c, i)] = _leaf(placeholder(c - 1, i))
            out = run(c, x)
            outs[(c, i)] = out
            if c + 1 < n:
                outs[(c + 1, i)] = run(c + 1, out)  # the next rank's chunk: its input move sends
            else:
                parts[i] = loss(i)
        else:
            if c + 1 < n:
                y = outs[(c + 1, i)]
                seed = [oar.zeros(list(_C.dist.local_value(y).shape), dtype=y.dtype)]
            else:
                y = parts[i] * scale if scale != 1.0 else parts[i]
                seed = None
            wrt = [params[k][1] for k in owned[c]] + ([leaves[(c, i)]] if c > 0 else [])
            gs = oar.grad([y], wrt, grad_outputs=seed, allow_unused=True)
            for k, g in zip(owned[c], gs):
                if g is not None:
                    acc[k] = g if acc[k] is None else acc[k] + g
    for k, (_, p) in enumerate(params):  # other ranks' chunks: empty gradients laid out as their
        if acc[k] is None and p.is_dist() and me not in p.process_mesh.process_ids:  # parameters, as
            acc[k] = oar.zeros_like(p)  # the other schedules' backward gives (the dist layer runs no op)
    # the other ranks' losses (the last chunk is another rank's): placeholders, as the other schedules return
    return [p if p is not None else loss(i) for i, p in enumerate(parts)], acc


def stage_of(layer):
    """(this rank's pipeline stage, the number of stages): the distinct meshes of the
    layer's parameters, in order."""
    from ..collective import get_rank
    meshes = []
    for p in layer.parameters():
        if p.is_dist():
            ids = tuple(p.process_mesh.process_ids)
            if ids not in meshes:
                meshes.append(ids)
    me = get_rank()
    stage = next((i for i, ids in enumerate(meshes) if me in ids), 0)
    return stage, max(len(meshes), 1)


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


def _trace_update(opt, grads, merged, lr_t, step_t, sharded):
    """Records `opt`'s update on the traced gradients (plus `merged`: id(param) -> the
    gradient in .grad) as dist.<rule>_update ops: the fused-update bindings hand it to
    the tracer (update_ops.cc) while the update inputs are set. The learning rate is 1
    while tracing, so each parameter's rate in the op is its multiplier of the lr input."""
    from ...autograd import no_grad
    ids = {id(p) for p in opt._parameter_list}
    by_param = {id(p): (p, g) for _, p, g in grads if id(p) in ids}
    pairs = []
    with no_grad():
        for p in opt._parameter_list:
            g = by_param.get(id(p), (p, None))[1]
            a = merged.get(id(p))
            g = a if g is None else (g if a is None else a + g)
            if g is not None and not p.stop_gradient:
                pairs.append((p, g))
    saved = opt._learning_rate, opt._step_count
    opt._learning_rate = 1.0
    _C.distributed.set_update_inputs(lr_t, step_t)
    try:
        if sharded is not None:  # ShardingStage1/2: each planned parameter updated as its slice
            sharded._step_pairs(pairs, _traced_relayout)
        else:
            opt._apply_pairs(pairs)
    finally:
        _C.distributed.set_update_inputs(None, None)
        opt._learning_rate, opt._step_count = saved


def trace(mode, layer, loss_fn, args, micro, scale, schedule, optimizer=None, merge=False, sharded=None,
          vpp_degree=1):
    """See _trace; restores what a sharded update's trace relaid out."""
    holders = []
    try:
        return _trace(mode, layer, loss_fn, args, micro, scale, schedule, optimizer, merge, sharded, holders,
                      vpp_degree)
    finally:
        for p, h, whole in holders:  # the parameter's own memory and layout again
            _C.dist.set_local_value(p, h)
            _C.dist.set_placements(p, _encode_all(whole, "shard_optimizer"), False)


def _trace(mode, layer, loss_fn, args, micro, scale, schedule, optimizer, merge, sharded, holders, vpp_degree=1):
    """Traces one step of `mode` on `args` (inputs..., labels for train/eval) into a
    CompiledStep. With `optimizer` (fused_optimizer's) the train step ends with its update
    (on the gradients plus, with `merge`, those in .grad: gradient_merge's last call);
    otherwise it outputs the gradients. The tracing run is a real eager step (its
    collectives run on every rank alike); its results are dropped, nothing is written and
    the random state is restored, so the first program run is the step that counts."""
    import oar
    from ...autograd import enable_grad, no_grad
    from .static_mode import _split

    state = _named_state(layer)
    tracer = _pir.Tracer()
    for i, t in enumerate(args):
        tracer.add_input(t, f"x{i}", list(_local(t).shape))
    for name, t in state:
        tracer.add_parameter(t, name)
    updates = mode == "train" and optimizer is not None
    opt_state, acc_inputs, merged = [], [], {}
    if updates:
        lr_t = oar.to_tensor(1.0, dtype="float64")
        step_t = oar.to_tensor(optimizer._step_count + 1, dtype="int64")
        tracer.add_input(lr_t, "opt_lr", [])
        tracer.add_input(step_t, "opt_step", [])
        opt_state = _state_names(optimizer, sharded)
        for name, t in opt_state:
            tracer.add_parameter(t, name)
        # gradient_merge's last call: the gradients in .grad are inputs (added to this call's)
        for i, p in enumerate(optimizer._parameter_list):
            if merge and not p.stop_gradient and p.grad is not None:
                tracer.add_input(p.grad, f"acc{i}", list(_local(p.grad).shape))
                acc_inputs.append(i)
                merged[id(p)] = p.grad
    rng = get_rng_state()
    versions = [(n, t, t._version) for n, t in state + opt_state]
    params = [(n, p) for n, p in layer.named_parameters() if not p.stop_gradient]
    grads = []
    stage, stages = stage_of(layer) if micro > 1 else (0, 1)
    with _Tracing(tracer), (enable_grad() if mode == "train" else no_grad()):
        if updates and sharded is not None:
            # A ShardingStage1/2 parameter's update relays it out (a slice, then gathered): a
            # handle on its parameter value takes the final value's write (set_parameter).
            for p in optimizer._parameter_list:
                if id(p) in sharded._plan and not p.stop_gradient:
                    h = p._local_value()
                    _C.distributed.trace_alias(h, p)
                    holders.append((p, h, list(p.placements)))
        if mode == "predict":
            result = layer(*args)
        else:
            chunks = [tuple(args)] if micro == 1 else list(zip(*(_split(t, micro) for t in args)))
            parts = [None] * len(chunks)
            acc = [None] * len(params)
            if schedule == "VPP" and mode == "train" and micro > 1:
                parts, acc = _trace_vpp(layer, loss_fn, chunks, micro, scale, params, vpp_degree)
            units = [] if schedule == "VPP" and mode == "train" and micro > 1 else \
                schedule_order(schedule, len(chunks), stage, stages)
            for kind, i in units:
                if kind == "F":
                    part = loss_fn(layer(*chunks[i][:-1]), chunks[i][-1])
                    part = part / micro if micro > 1 else part
                    # Replicate once: the returned loss and the backward's seed (a Partial
                    # loss would be all-reduced again for the seed).
                    parts[i] = _replicated(part)
                elif mode == "train" and params:
                    part = parts[i]
                    gs = oar.grad([part * scale if scale != 1.0 else part], [p for _, p in params], allow_unused=True)
                    for j, g in enumerate(gs):
                        if g is not None:
                            acc[j] = g if acc[j] is None else acc[j] + g
            with no_grad():  # (detach would drop the dist metadata)
                loss = parts[0]
                for part in parts[1:]:
                    loss = loss + part
                result = _replicated(loss)
            for (name, p), g in zip(params, acc):
                if g is not None:
                    grads.append((name, p, _grad_layout(g, p)))
            if updates:
                _trace_update(optimizer, grads, merged, lr_t, step_t, sharded)
                for p, h, _ in holders:
                    _C.distributed.trace_write(h, p)
                grads = []
    outs = []
    out_struct = _flatten(result, outs)
    if any(not isinstance(t, oar.Tensor) for t in outs):
        raise NotImplementedError("DistModel: the step returns a value that is not a tensor")
    outs += [g for _, _, g in grads]
    metas = [_meta(t) for t in outs]
    program = tracer.finish(outs)
    set_rng_state(rng)
    relaid = {id(p) for p, _, _ in holders}
    for name, t, v in versions:
        if t._version != v and id(t) not in relaid:
            raise NotImplementedError(f"DistModel: the step writes into {name!r} (a buffer update such as "
                                      "BatchNorm's running statistics), which the compiled step does not replay")
    place = args[0].place if args else _C._get_current_place()
    return CompiledStep(program, out_struct, metas, [n for n, _, _ in grads], dict(opt_state), updates, acc_inputs,
                        place)
