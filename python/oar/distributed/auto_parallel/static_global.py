"""DistModel's global program (Note [DistModel] in docs/notes/distributed.md): one step traced
as the serial program with global shapes, each dist input, parameter, optimizer state and
user reshard marked by a `dist.shard_annotate`; the static auto-parallel passes (Note [Static
auto-parallel passes]) then complete, reshard and partition it for this rank.

The step is traced on global dense tensors, not through the dist dispatch layer: every dist
tensor the step reads stands in, for the trace, as an ordinary tensor holding its whole value
(gathered once per signature; every rank gathers the same tensors in the same order), so the
ops below see serial code and the trace layer records global shapes. Which tensors were dist,
and how, is recorded by the annotations."""
from ... import _C
from ..._creation import get_rng_state, set_rng_state
from ...jit.api import _flatten, _named_state, _Tracing
from .placement_type import Replicate, Shard, _decode, _encode_all
from .process_mesh import ProcessMesh
from ...nn import clip as _clip
from .static_pipeline import Plan, clear_hints, hint, hinted, move, trace_micro_batches, zeros_whole
from .static_program import CompiledStep

_pir = _C.pir
_tracing = []  # the global traces in progress (reshard / shard_tensor annotate inside them)


def tracing_global():
    """Whether a global DistModel trace is in progress (reshard and shard_tensor of the traced
    code then annotate instead of moving data). DistModel traces on the thread that calls it,
    one step at a time."""
    return bool(_tracing)


class _ClipHooks:
    """What nn/clip.py's global norm asks of the global trace, whose tensors carry no mesh
    (Note [Pipeline clipping]; one all-reduce per layout, Note [DistModel])."""

    @staticmethod
    def mesh_of(t):
        """The mesh a traced tensor lives on, where the trace knows it (an annotated value, a
        stage move's result: static_pipeline.hint)."""
        lay = hinted(t)
        return lay.mesh if lay is not None else None

    @staticmethod
    def sum_layout(g):
        """How sum(g * g) of a traced gradient lies: Partial ("P") on each mesh axis g is split
        or Partial on, Replicate ("R") elsewhere; None when that is Replicate everywhere."""
        lay = hinted(g)
        key = tuple("R" if q.is_replicated() else "P" for q in lay.placements) if lay is not None else ()
        return key if "P" in key else None

    @staticmethod
    def replicate(s, mesh):
        """A sum of squares made Replicate on its mesh (dist-reshard's one all-reduce)."""
        return annotate(s, Layout(mesh, [Replicate() for _ in range(mesh.ndim)]), "DistModel global norm")

    move = staticmethod(move)


class Layout:
    """Where a tensor of the global program lives: mesh and placements (one per mesh axis)."""

    def __init__(self, mesh, placements):
        self.mesh, self.placements = mesh, list(placements)

    def __repr__(self):
        return f"Layout({self.placements} on {self.mesh.process_ids})"


def layout_of(t):
    return Layout(t.process_mesh, t.placements) if t.is_dist() else None


def annotate(t, layout, what="DistModel"):
    """Records `dist.shard_annotate` of t's value with `layout` (t reads the annotated value
    from now on) and returns t. A placement that does not fit t (a Shard dim out of range)
    is an error naming `what`, t's shape and the placements."""
    mesh, placements = layout.mesh, layout.placements
    encoded = _encode_all(placements, what)
    try:
        _C.dist.dims_mapping(mesh.shape, mesh.process_ids, encoded, len(t.shape))
    except ValueError as e:
        from ...nn.layer import Parameter
        tensor = f"parameter {t.name!r}" if isinstance(t, Parameter) else "a tensor"
        raise ValueError(f"{what}: placements {placements} for {tensor} of shape {list(t.shape)} on mesh "
                         f"{mesh.shape}: {e}") from None
    _C.dist.shard_annotate(t, mesh.shape, mesh.process_ids, mesh.dim_names, encoded)
    hint(t, layout)
    return t


def _gathered(local, layout, global_shape):
    """The whole value of a tensor whose local value is `local` laid out as `layout` (a
    reshard to Replicate over the mesh: collectives every rank of the mesh runs alike)."""
    from ...autograd import no_grad
    from .api import _attach, reshard
    view = _C.dist.local_value(local)  # a new handle on the same memory
    _attach(view, layout.mesh, _encode_all(layout.placements, "DistModel"), global_shape)
    with no_grad():
        whole = reshard(view, layout.mesh, [Replicate() for _ in layout.placements])
    return _C.dist.local_value(whole)


def _whole_or_zeros(t, layout, global_shape):
    """t's whole value gathered over its mesh, or, for another stage's tensor (this process
    holds none of it), zeros of its shape: the trace needs only its shape."""
    from ..collective import get_rank
    if get_rank() in layout.mesh.process_ids:
        return _gathered(t, layout, global_shape)
    return zeros_whole(t, global_shape)


class _StandIns:
    """While open, each registered tensor (a parameter, buffer or optimizer state, by
    identity) is an ordinary tensor holding its whole value; on exit it gets back its own
    memory and dist metadata. Optimizers and layers keep the same objects throughout."""

    def __init__(self):
        self._held = []  # (tensor, its own local value, its dist metadata or None)

    def add(self, t, layout, global_shape):
        whole = _whole_or_zeros(t, layout, global_shape)
        own = _C.dist.local_value(t)
        meta = _C.dist.take_dist_meta(t) if t.is_dist() else None
        _C.dist.set_local_value(t, whole)
        self._held.append((t, own, meta))

    def restore(self):
        for t, own, meta in reversed(self._held):
            _C.dist.set_local_value(t, own)
            if meta is not None:
                _C.dist.put_dist_meta(t, meta)
        self._held = []


def _state_layouts(opt, sharded):
    """[(program name, state tensor, its layout, the parameter's global shape)] of the
    optimizer's accumulators (static_program._state_names creates them): a state follows its
    parameter's layout, or under ShardingStage1/2 the parameter's split over the sharding axis."""
    from ..collective import get_rank
    from .static_program import _state_names
    plan = getattr(sharded, "_plan", {})
    out = []
    for name, t in _state_names(opt, sharded):
        p = opt._parameter_list[int(name[3:name.index(".")])]
        lay = layout_of(p)
        if lay is not None and id(p) in plan:
            lay = Layout(p.process_mesh, plan[id(p)][0])
        # a state laid out as its parameter (after k leading dims of its own: ASGD's window
        # [batch_num, *shape]); another one (a scalar) is the same on every rank
        k = len(t.shape) - len(p.shape)
        if lay is not None and get_rank() not in lay.mesh.process_ids:  # another stage's: held by none here
            out.append((name, t, lay, list(p._global_shape)))
            continue
        if lay is None or k < 0 or list(t.shape[k:]) != _local_shape(p._global_shape, lay):
            out.append((name, t, None, list(t.shape)))
            continue
        if k:
            # the state's own leading dims stay whole; the parameter's split dims move by k
            lay = Layout(lay.mesh, [Shard(q.get_dim() + k) if q.is_shard() else q for q in lay.placements])
        out.append((name, t, lay, list(t.shape[:k]) + list(p._global_shape)))
    return out


def _local_shape(global_shape, lay):
    """This rank's shape of a tensor of `global_shape` laid out as `lay`."""
    from ..collective import get_rank
    mesh = lay.mesh
    encoded = _encode_all(lay.placements, "DistModel")
    return list(_C.dist.local_shard(list(global_shape), mesh.shape, mesh.process_ids, encoded, get_rank())[0])


def _grad_layout(p, lay, sharded):
    """The layout parameter p's gradient takes before the update (what the eager dist layer's
    post-accumulate hook gives): p's layout `lay`, Partial axes as Replicate; ShardingStage2's
    split (a reduce-scatter instead of an all-reduce)."""
    plan = getattr(sharded, "_plan", {})
    if id(p) in plan and sharded._stage.stage == 2:
        return Layout(lay.mesh, plan[id(p)][0])
    return Layout(lay.mesh, [Replicate() if q.is_partial() else q for q in lay.placements])


class GlobalStep:
    """A traced global step: `program` (serial, global shapes, annotated), `inputs` [(name,
    layout or None)], `outputs` the global shapes of the program's outputs in order (the
    step's results, then the gradients of `grad_params` without updates), and `out_struct`
    (how the results nest)."""

    def __init__(self, program, inputs, outputs, out_struct, grad_params, opt_state, updates, acc):
        self.program, self.inputs, self.outputs = program, inputs, outputs
        self.out_struct, self.grad_params = out_struct, grad_params
        self.opt_state, self.updates, self.acc = opt_state, updates, acc


def _check_one_mesh(mesh, state, args):
    """Before any gather: the step's dist tensors must share one mesh (a step over several is
    run eagerly, whose dist layer names the op)."""
    import oar
    for what, t in [(n, t) for n, t in state] + [(f"input {i}", t) for i, t in enumerate(args)]:
        if isinstance(t, oar.Tensor) and t.is_dist() and t.process_mesh != mesh:
            raise NotImplementedError(f"DistModel: {what} lies on mesh {t.process_mesh.process_ids}, the "
                                      f"step's other dist tensors on {mesh.process_ids}")


def trace_global(mode, layer, loss_fn, args, scale=1.0, optimizer=None, merge=False, sharded=None, pipeline=None):
    """Traces one step of `mode` on `args` (inputs..., labels for train/eval) into a
    GlobalStep. With `optimizer` (static_program.fused_optimizer's) the train step ends with
    its update as dist.<rule>_update ops (on the gradients plus, with `merge`, those in .grad:
    gradient_merge's last call); otherwise it outputs the gradients. `pipeline`: (micro-batches,
    schedule_mode, vpp_degree) of Strategy.pipeline, each micro-batch's forward and backward
    traced in this rank's schedule order (static_pipeline.py). The tracing run is a real
    serial step on the whole tensors; its results are dropped, nothing is written and the
    random state is restored."""
    import oar
    from ...autograd import enable_grad, no_grad
    from .static_mode import _params_mesh

    state = _named_state(layer)
    mesh = _params_mesh(layer) or next((t.process_mesh for t in args if isinstance(t, oar.Tensor) and t.is_dist()),
                                       None)
    micro, schedule, vpp_degree = pipeline or (1, "FThenB", 1)
    # eval: the micro-batches' forwards in order (VPP's chunk units are a train schedule)
    plan = Plan(layer, micro, schedule if mode == "train" else "FThenB", vpp_degree) if mode != "predict" else None
    if plan is None or plan.stages == 1:
        _check_one_mesh(mesh, state, args)
    else:  # the loss lives on the last stage
        mesh = plan.loss_mesh
    whole = Layout(mesh, [Replicate() for _ in range(mesh.ndim)]) if mesh is not None else None
    updates = mode == "train" and optimizer is not None
    states = _state_layouts(optimizer, sharded) if updates else []
    stand = _StandIns()
    tracer = _pir.Tracer()
    rng = get_rng_state()
    try:
        # The whole values: every rank gathers the same tensors in the same order.
        params = [(n, t, layout_of(t), list(t._global_shape)) for n, t in state]
        for _, t, lay, shape in params:
            if lay is not None:
                stand.add(t, lay, shape)
        for _, t, lay, shape in states:
            if lay is not None:
                stand.add(t, lay, shape)
        inputs, dense_args = [], []
        for i, t in enumerate(args):
            lay = layout_of(t) if isinstance(t, oar.Tensor) else None
            d = _gathered(t, lay, list(t.shape)) if lay is not None else t
            if lay is not None:
                d.stop_gradient = t.stop_gradient
            inputs.append((f"x{i}", lay))
            dense_args.append(d)
        acc, merged = [], {}
        if updates and merge:  # gradient_merge's last call: the gradients in .grad are inputs
            for i, p in enumerate(optimizer._parameter_list):
                if not p.stop_gradient and p.grad is not None:
                    g = p.grad
                    lay = layout_of(g)
                    d = g if lay is None else _whole_or_zeros(g, lay, list(g.shape))
                    acc.append((i, f"acc{i}", d, lay))
                    merged[id(p)] = d

        lr_t = step_t = None
        if updates:
            lr_t = oar.to_tensor(1.0, dtype="float64")
            step_t = oar.to_tensor(optimizer._step_count + 1, dtype="int64")
        versions = [(n, t, t._version) for n, t, _, _ in params + states]
        _tracing.append(tracer)
        _clip._global_trace = _ClipHooks
        grads = []
        with _Tracing(tracer), (enable_grad() if mode == "train" else no_grad()):
            # each declaration, then its annotation
            def declare(t, name, lay, parameter):
                if parameter:
                    tracer.add_parameter(t, name)
                else:
                    tracer.add_input(t, name, list(t.shape))
                if lay is not None:
                    annotate(t, lay, f"DistModel {'parameter' if parameter else 'input'} {name!r}")
            for (name, lay), d in zip(inputs, dense_args):
                declare(d, name, lay, False)
            for name, t, lay, _ in params:
                declare(t, name, lay, True)
            if updates:
                declare(lr_t, "opt_lr", None, False)
                declare(step_t, "opt_step", None, False)
                for name, t, lay, _ in states:
                    declare(t, name, lay, True)
                for _, name, d, lay in acc:
                    declare(d, name, lay, False)
            layouts = {id(t): lay for _, t, lay, _ in params if lay is not None}
            # ShardingStage2's split gradient only where the update follows (else .grad's layout)
            result, grads = _trace_body(mode, layer, loss_fn, dense_args, scale, whole, layouts,
                                        sharded if updates else None, plan)
            if updates:
                _trace_sharded_update(optimizer, grads, merged, lr_t, step_t, layouts, sharded)
                grads = []
        outs = []
        out_struct = _flatten(result, outs)
        if any(not isinstance(t, oar.Tensor) for t in outs):
            raise NotImplementedError("DistModel: the step returns a value that is not a tensor")
        outs += [g for _, _, g, _ in grads]
        program = tracer.finish(outs)
        for name, t, v in versions:
            if t._version != v:
                raise NotImplementedError(f"DistModel: the step writes into {name!r} (a buffer update such as "
                                          "BatchNorm's running statistics), which the compiled step does not replay")
    finally:
        if _tracing and _tracing[-1] is tracer:
            _tracing.pop()
        clear_hints()
        _clip._global_trace = None
        stand.restore()
        set_rng_state(rng)
    return GlobalStep(program, inputs, [list(t.shape) for t in outs], out_struct, [n for n, _, _, _ in grads],
                      [(n, t) for n, t, _, _ in states], updates, [i for i, _, _, _ in acc])


def _trace_body(mode, layer, loss_fn, args, scale, whole, layouts, sharded, plan):
    """Forward (and loss; for train the backward through oar.grad) on the whole tensors, per
    micro-batch in this rank's schedule order (`plan`, static_pipeline.Plan). Returns (the
    result, [(name, parameter, gradient, its layout)]): each micro-batch's loss annotated
    Replicate (the returned loss and the backward's seed), each gradient annotated with the
    layout its update reads."""
    from ...autograd import no_grad
    from .static_mode import _split
    if mode == "predict":
        return layer(*args), []
    params = [(n, p) for n, p in layer.named_parameters() if not p.stop_gradient] if mode == "train" else []
    chunks = [tuple(args)] if plan.micro == 1 else list(zip(*(_split(t, plan.micro) for t in args)))
    parts, gs = trace_micro_batches(plan, layer, loss_fn, chunks, scale, params, whole)
    with no_grad():
        loss = parts[0]
        for part in parts[1:]:
            loss = loss + part
    grads = []
    for (name, p), g in zip(params, gs):
        if g is None:
            continue
        lay = _grad_layout(p, layouts[id(p)], sharded) if id(p) in layouts else None
        if lay is not None:
            annotate(g, lay, f"DistModel gradient of {name!r}")
        grads.append((name, p, g, lay))
    return loss, grads


def _trace_sharded_update(opt, grads, merged, lr_t, step_t, layouts, sharded):
    """The update as dist.<rule>_update ops. Under ShardingStage1/2 each planned parameter and
    its gradient are annotated with the split before the update (the update runs on slices)
    and the updated parameter with its own layout after it (the all-gather)."""
    from .static_program import _trace_update
    plan = getattr(sharded, "_plan", {})
    pairs = [(name, p, g) for name, p, g, _ in grads]
    whole_of = {}
    for name, p, g in pairs:
        if id(p) in plan:
            lay = layouts[id(p)]
            split = Layout(lay.mesh, plan[id(p)][0])
            annotate(p, split, f"DistModel parameter {name!r}")
            annotate(g, split, f"DistModel gradient of {name!r}")
            whole_of[id(p)] = (p, lay, name)
    if len({tuple(lay.mesh.process_ids) for lay in layouts.values()}) > 1:
        _update_per_mesh(opt, layouts, lambda: _trace_update(opt, pairs, merged, lr_t, step_t))
    else:
        _trace_update(opt, pairs, merged, lr_t, step_t)
    for p, lay, name in whole_of.values():
        annotate(p, lay, f"DistModel parameter {name!r}")


def _update_per_mesh(opt, layouts, trace):
    """Runs `trace` with each of `opt`'s fused updates split into one per mesh of its
    parameters (pipeline stages: an op's operands lie on one mesh), in the order the meshes
    first appear."""
    fused = opt._update

    def per_mesh(group, params, grads, lrs, wds, step):
        by_mesh = {}
        for q in zip(params, grads, lrs, wds):
            lay = layouts.get(id(q[0]))
            by_mesh.setdefault(tuple(lay.mesh.process_ids) if lay is not None else None, []).append(q)
        for qs in by_mesh.values():
            fused(group, *(list(c) for c in zip(*qs)), step)
    opt._update = per_mesh
    try:
        trace()
    finally:
        del opt._update


class CompiledGlobal(CompiledStep):
    """A global step made this rank's: `global_program` (as traced), `program` (after the dist
    passes: local shapes, the transfers as dist.* ops; what dist_main_program shows) and the
    executor running its lowered copy, as a CompiledStep."""

    def __init__(self, step, place):
        from ..collective import get_rank
        program = step.program.clone()
        layouts = [None] * len(step.outputs)
        if any(op.name == "dist.shard_annotate" for op in step.program.ops()):  # else: serial as it is
            program.run_passes("dist-complete")
            layouts = _C.dist.output_placements(program)  # how the outputs come out
            program.run_passes(f"dist-reshard,dist-partition{{rank={get_rank()}}}")
        metas = [None if lay is None else (ProcessMesh(shape=lay[0], process_ids=lay[1], dim_names=lay[2]),
                                           [_decode(*q) for q in lay[3]], shape)
                 for lay, shape in zip(layouts, step.outputs)]
        super().__init__(program, step.out_struct, metas, step.grad_params, dict(step.opt_state), step.updates,
                         step.acc, place)
        self.global_program = step.program


def compile_global(mode, layer, loss_fn, args, scale=1.0, optimizer=None, merge=False, sharded=None,
                   pipeline=None):
    """trace_global, then the dist passes for this rank: a CompiledGlobal."""
    step = trace_global(mode, layer, loss_fn, args, scale, optimizer, merge, sharded, pipeline)
    place = args[0].place if args else _C._get_current_place()
    return CompiledGlobal(step, place)


def run_serial(program, inputs, named, place=None):
    """Runs a global program in this one process as the serial program it is: its annotations
    dropped, no dist passes. `inputs` in order, `named` the parameters by name (whole
    tensors; the update writes into them). Returns the outputs."""
    p = program.clone()
    _C.distributed.drop_annotations(p)
    lowered = p.run_pipeline("jit-train", lower_copy=True, place=place)
    _C.distributed.lower_collectives(lowered)  # the optimizer's update ops
    return _pir.Executor(lowered, place if place is not None else _C._get_current_place()).run(inputs, named)
