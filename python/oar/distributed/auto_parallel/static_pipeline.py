"""Pipelines in DistModel's global program (Note [DistModel] in docs/notes/distributed.md,
"Pipelines"): the micro-batches of a step traced serially on the whole tensors in this rank's
schedule order (FThenB, 1F1B, VPP), each move between stages a differentiable pair of
dist.shard_annotate ops (the value onto the next stage's mesh, its gradient back), so the
static passes turn each move into a dist.send_recv and drop the other stages' ops.

While the global program is traced its tensors are ordinary ones, so where a stage's value
lives is not on the tensor: it is kept here for the values that cross stages (`hint`), set by
what knows it (the annotations, parallelize's stage hooks, VPP's chunk inputs)."""
from .placement_type import Replicate

_hints = {}  # id(tensor) -> (tensor, Layout): the stage a traced value lives on


def clear_hints():
    _hints.clear()


def hint(t, layout):
    """Records that traced tensor `t` lives on `layout` (a static_global.Layout)."""
    _hints[id(t)] = (t, layout)


def hinted(t):
    entry = _hints.get(id(t))
    return entry[1] if entry is not None and entry[0] is t else None


def _replicate_partial(layout):
    from .static_global import Layout
    return Layout(layout.mesh, [Replicate() if q.is_partial() else q for q in layout.placements])


def _move_layer():
    from ...autograd import PyLayer
    from .static_global import annotate

    class Move(PyLayer):
        """A move onto another mesh: the value annotated on `to`, its gradient annotated back
        on `back` (eager's ReshardGrad), each on a copy so both are ops of the program."""

        @staticmethod
        def forward(ctx, x, to, back):
            ctx.back = back
            return annotate(x.clone(), to, "DistModel pipeline move")

        @staticmethod
        def backward(ctx, g):
            return annotate(g.clone(), ctx.back, "DistModel pipeline move (gradient)")
    return Move


_Move = []


def move(t, mesh, src_mesh=None):
    """`t` moved onto `mesh` in the global program: from where it is hinted to live, else
    from `src_mesh` (Replicate there); unchanged when neither is known (an ordinary tensor,
    the same on every process, as eager leaves it) or when it is on `mesh` already. The
    placements are kept when the meshes have as many axes (Partial as Replicate)."""
    from .static_global import Layout
    src = hinted(t)
    if src is None and src_mesh is not None:
        src = Layout(src_mesh, [Replicate() for _ in range(src_mesh.ndim)])
    if src is None or src.mesh == mesh:
        return t
    kept = _replicate_partial(src).placements
    to = Layout(mesh, kept if len(kept) == mesh.ndim else [Replicate() for _ in range(mesh.ndim)])
    if not _Move:
        _Move.append(_move_layer())
    y = _Move[0].apply(t, to, _replicate_partial(src))
    hint(y, to)
    return y


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


def stage_meshes_of(layer):
    """The distinct meshes of the layer's dist parameters, in order (a pipeline's stages)."""
    meshes = []
    for p in layer.parameters():
        if p.is_dist() and p.process_mesh not in meshes:
            meshes.append(p.process_mesh)
    return meshes


class Plan:
    """How a train step's micro-batches are traced on this rank, decided before the trace
    (while the parameters still carry their meshes): the schedule, this rank's stage, the
    stage meshes, the mesh the loss is computed on, and for VPP the chunks and their meshes."""

    def __init__(self, layer, micro, schedule, vpp_degree):
        from ..collective import get_rank
        self.micro, self.schedule = micro, schedule
        self.meshes = stage_meshes_of(layer)
        me = get_rank()
        self.stage = next((i for i, m in enumerate(self.meshes) if me in m.process_ids), 0)
        self.stages = max(len(self.meshes), 1)
        self.loss_mesh = self.meshes[-1] if self.meshes else None
        self.vpp = None
        if schedule == "VPP" and micro > 1:
            chunks, meshes, vpp = check_vpp(layer, micro, vpp_degree)
            by_ids = {tuple(m.process_ids): m for m in self.meshes}
            self.chunks = [(by_ids[ids], items) for ids, items in chunks]
            self.vpp, self.stages = vpp, len(meshes)
            self.stage = next((i for i, ids in enumerate(meshes) if me in ids), 0)
            self.loss_mesh = self.chunks[-1][0]


def trace_micro_batches(plan, layer, loss_fn, chunks, scale, params, loss_layout):
    """The forwards and backwards of the micro-batches `chunks` ([(inputs..., labels)]) in this
    rank's order on the whole tensors. Returns (the micro-batches' losses, each divided by
    their count and annotated `loss_layout`, the parameters' gradients summed over them)."""
    import oar
    from .static_global import annotate
    micro = len(chunks)

    def loss_of(out, labels):
        part = loss_fn(out, labels)
        part = part / micro if micro > 1 else part
        return annotate(part, loss_layout, "DistModel loss") if loss_layout is not None else part
    acc = [None] * len(params)

    def add(k, g):
        if g is not None:
            acc[k] = g if acc[k] is None else acc[k] + g
    if plan.vpp is not None:
        return _trace_vpp(plan, chunks, scale, params, loss_of, add), acc
    parts = [None] * micro
    for kind, i in schedule_order(plan.schedule, micro, plan.stage, plan.stages):
        if kind == "F":
            parts[i] = loss_of(layer(*chunks[i][:-1]), chunks[i][-1])
        elif params:
            y = parts[i] * scale if scale != 1.0 else parts[i]
            for k, g in enumerate(oar.grad([y], [p for _, p in params], allow_unused=True)):
                add(k, g)
    return parts, acc


def _trace_vpp(plan, chunks_in, scale, params, loss_of, add):
    """VPP: chunk c of micro-batch i runs on a leaf cut from chunk c-1's output and moved onto
    its mesh; this rank's units in vpp_order, each of its forwards followed at once by the next
    chunk's (another rank's: its move is this rank's send), each backward by oar.grad from the
    chunk's output (seeded by the next chunk's gradient of its leaf) to its parameters and leaf
    (the leaf's gradient moving back is the send). Chunks of other ranks run when first needed."""
    import oar
    from .static_global import Layout
    chunks, stages, n = plan.chunks, plan.stages, len(plan.chunks)
    whole = [Layout(m, [Replicate() for _ in range(m.ndim)]) for m, _ in chunks]
    index = {id(p): k for k, (_, p) in enumerate(params)}
    owned = [[index[id(p)] for item in items for p in item.parameters() if id(p) in index] for _, items in chunks]
    outs, leaves, leaf_grads, parts, done = {}, {}, {}, [None] * len(chunks_in), set()

    def forward(c, i):
        if (c, i) in outs:
            return outs[(c, i)]
        if c == 0:
            x = chunks_in[i][0]
        else:
            prev = forward(c - 1, i)
            leaf = leaves[(c, i)] = prev.detach()
            leaf.stop_gradient = False
            hint(leaf, whole[c - 1])
            x = move(leaf, chunks[c][0])
        for item in chunks[c][1]:
            x = item(x)
        outs[(c, i)] = x
        if c == n - 1:
            parts[i] = loss_of(x, chunks_in[i][-1])
        return x

    def backward(c, i):
        if (c, i) in done:
            return
        done.add((c, i))
        if c == n - 1:
            y, seed = (parts[i] * scale if scale != 1.0 else parts[i]), None
        else:
            backward(c + 1, i)
            y, seed = outs[(c, i)], [leaf_grads[(c + 1, i)]]
        wrt = [params[k][1] for k in owned[c]] + ([leaves[(c, i)]] if c > 0 else [])
        if not wrt:
            return
        gs = oar.grad([y], wrt, grad_outputs=seed, allow_unused=True)
        for k, g in zip(owned[c], gs):
            add(k, g)
        if c > 0:
            leaf_grads[(c, i)] = gs[-1]
    for kind, i, j in vpp_order(len(chunks_in), plan.stage, stages, plan.vpp):
        c = j * stages + plan.stage
        if kind == "F":
            forward(c, i)
            if c + 1 < n:
                forward(c + 1, i)
        else:
            backward(c, i)
    # The other stages' units this rank's did not need (their ops are dropped here): every
    # rank's program then has every loss and every gradient, so the steps after the
    # schedule (the losses' sum, clipping's chain over the stages) are the same on each.
    for i in range(len(chunks_in)):
        forward(n - 1, i)
        if params:
            for c in range(n):
                backward(c, i)
    return parts


def zeros_whole(t, global_shape):
    """The stand-in of a tensor this process holds nothing of (another stage's): zeros of its
    whole shape. The trace needs only its shape; the values it computes are dropped."""
    import oar
    return oar.zeros(list(global_shape), dtype=t.dtype)
