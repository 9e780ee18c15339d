"""Dist tensors in one process: shard_tensor, dtensor_from_local, dtensor_from_fn, the Tensor
methods (is_dist, placements, process_mesh, _local_value) and SPMD rule inference.

A dist tensor is an ordinary oar.Tensor whose data is this process's local shard, with the
mesh, placements and global shape in its dist slot (TensorImpl::dist). Without a launcher this
process is rank 0; under one, every rank cuts its own shard from the global value it was given
(no communication). reshard moves data between layouts over the process groups (Note [Reshard]);
ops on dist tensors run through the dist dispatch layer (Note [Dist layer]); shard_layer and
shard_optimizer lay a model and its optimizer over a mesh."""

from ... import _C
from ..._C import Tensor
from .placement_type import Replicate, Shard, _decode, _encode_all
from .process_mesh import ProcessMesh

__all__ = ["shard_tensor", "dtensor_from_local", "dtensor_from_fn", "infer_spmd", "reshard", "unshard_dtensor",
           "shard_layer", "shard_optimizer", "ShardingStage1", "ShardingStage2", "ShardingStage3"]


def _check_mesh(mesh, op):
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"{op}: mesh must be a ProcessMesh, got {type(mesh).__name__}")


def _as_tensor(data, dtype, place, stop_gradient, op):
    import oar
    if isinstance(data, Tensor):
        if data.is_dist():
            raise ValueError(f"{op}: the input is already a dist tensor; reshard it instead")
        t = data.astype(dtype) if dtype is not None else data
        return t, data.stop_gradient if stop_gradient is None else stop_gradient
    t = oar.to_tensor(data, dtype=dtype, place=place)
    return t, True if stop_gradient is None else stop_gradient


def _global_trace():
    """Whether DistModel is tracing its global program (Note [DistModel]): reshard and
    shard_tensor in the traced code then become dist.shard_annotate ops."""
    from .static_global import tracing_global
    return tracing_global()


def _annotate(t, mesh, placements, op):
    from .static_global import Layout, annotate
    return annotate(t, Layout(mesh, placements), op)


def _attach(local, mesh, encoded, global_shape):
    _C.dist.set_dist_meta(local, mesh.shape, mesh.process_ids, mesh.dim_names, encoded, list(global_shape))
    enable = getattr(_C.distributed, "enable_dist_layer", None)
    if enable is not None:  # ops on dist tensors go through the dist layer from now on
        enable()
    return local


def _shard_parameter_in_place(param, local, mesh, encoded, global_shape):
    """A Parameter is sharded in place (its data becomes the local shard, the same object
    gains the dist metadata), so optimizers and layers holding it keep working."""
    _C.dist.set_local_value(param, local)
    return _attach(param, mesh, encoded, global_shape)


def _local_piece(t, mesh, placements, encoded, rank):
    """This rank's piece of global tensor `t`: its shard, and for a Partial axis the value at
    coordinate 0 and the reduction's identity elsewhere (so that reducing gives `t` back)."""
    import oar
    shape = list(t.shape)
    if rank not in mesh:  # outside the mesh: holds nothing, as in Paddle
        return oar.zeros([0] * len(shape), dtype=t.dtype)
    local_shape, offset = _C.dist.local_shard(shape, mesh.shape, mesh.process_ids, encoded, rank)
    piece = t
    if shape:
        piece = t[tuple(slice(o, o + n) for o, n in zip(offset, local_shape))].clone()
    coord = mesh._coord(rank)
    for axis, p in enumerate(placements):
        if p.is_partial() and coord[axis] != 0:
            if p.reduce_type() == 0:  # kRedSum: zeros add nothing
                piece = oar.zeros_like(piece)
            elif p.reduce_type() == 3:  # kRedProd: ones multiply by nothing
                piece = oar.ones_like(piece)
    return piece


def shard_tensor(data, mesh, placements, dtype=None, place=None, stop_gradient=None):
    """A dist tensor laid out over `mesh` by `placements` (one per mesh axis), made from the
    global value `data` (a Tensor, array or list): this process keeps its own shard. A
    Parameter is sharded in place and returned (so optimizers holding it see the shard)."""
    _check_mesh(mesh, "shard_tensor")
    if isinstance(data, Tensor) and _global_trace():  # DistModel's global program: an annotation
        return _annotate(data, mesh, placements, "shard_tensor")
    encoded = _encode_all(placements, "shard_tensor")
    t, sg = _as_tensor(data, dtype, place, stop_gradient, "shard_tensor")
    global_shape = list(t.shape)
    _C.dist.dims_mapping(mesh.shape, mesh.process_ids, encoded, len(global_shape))  # validates
    from .. import get_rank  # deferred: oar.distributed imports this package
    local = _local_piece(t, mesh, placements, encoded, get_rank())
    from ...nn.layer import Parameter
    if isinstance(data, Parameter) and dtype is None:
        return _shard_parameter_in_place(data, local, mesh, encoded, global_shape)
    local.stop_gradient = sg
    return _attach(local, mesh, encoded, global_shape)


def dtensor_from_fn(fn, mesh, placements, *args, **kwargs):
    """shard_tensor(fn(*args, **kwargs), mesh, placements)."""
    return shard_tensor(fn(*args, **kwargs), mesh, placements)


def dtensor_from_local(local_tensor, mesh, placements):
    """A dist tensor whose local shard is `local_tensor`; the global shape assumes even
    shards (local size times the mesh axis size along each Shard dim), as in Paddle."""
    _check_mesh(mesh, "dtensor_from_local")
    encoded = _encode_all(placements, "dtensor_from_local")
    if not isinstance(local_tensor, Tensor):
        raise TypeError(f"dtensor_from_local: local_tensor must be a Tensor, got {type(local_tensor).__name__}")
    if local_tensor.is_dist():
        raise ValueError("dtensor_from_local: local_tensor is already a dist tensor")
    global_shape = list(local_tensor.shape)
    _C.dist.dims_mapping(mesh.shape, mesh.process_ids, encoded, len(global_shape))  # validates
    for axis, p in enumerate(placements):
        if p.is_shard():
            global_shape[p.get_dim()] *= mesh.shape[axis]
    local = _C.dist.local_value(local_tensor)
    local.stop_gradient = local_tensor.stop_gradient
    return _attach(local, mesh, encoded, global_shape)


def infer_spmd(op, mesh, inputs, attrs=None, num_outputs=1, outputs=None, rule=""):
    """Runs op's SPMD rule (or `rule`) for debugging and tests. inputs (and outputs, for the
    reverse rule): None or (shape, placements) on `mesh`. Returns (input placements, output
    placements), the inputs' being what the op wants them resharded to."""
    _check_mesh(mesh, "infer_spmd")

    def encode(t):
        if t is None:
            return None
        shape, placements = t
        dm, partial = _C.dist.dims_mapping(mesh.shape, mesh.process_ids,
                                           _encode_all(placements, "infer_spmd"), len(shape))
        return (list(shape), dm, partial)

    ins = [encode(t) for t in inputs]
    outs = None if outputs is None else [encode(t) for t in outputs]
    res_in, res_out = _C.dist.infer_spmd(op, mesh.shape, ins, attrs or {}, num_outputs, outs, rule)

    def decode(attrs):
        return [[_decode(*p) for p in _C.dist.placements(mesh.shape, mesh.process_ids, dm, partial)]
                for dm, partial in attrs]
    return decode(res_in), decode(res_out)


def reshard(dist_tensor, mesh, placements):
    """`dist_tensor` laid out on `mesh` as `placements` (one per mesh axis), moving data over
    the mesh axes' process groups (Note [Reshard]). Differentiable; the input when nothing
    changes. `mesh` may be another mesh than the tensor's (Note [Reshard]: gathered on its own mesh,
    sent process to process, cut on the new one)."""
    _check_mesh(mesh, "reshard")
    if isinstance(dist_tensor, Tensor) and _global_trace():  # DistModel's global program: an annotation
        return _annotate(dist_tensor, mesh, placements, "reshard")
    if not isinstance(dist_tensor, Tensor) or not dist_tensor.is_dist():
        raise ValueError("reshard: dist_tensor must be a dist tensor (see shard_tensor), got "
                         f"{type(dist_tensor).__name__ if not isinstance(dist_tensor, Tensor) else 'a dense Tensor'}")
    encoded = _encode_all(placements, "reshard")
    try:
        _C.dist.dims_mapping(mesh.shape, mesh.process_ids, encoded, len(dist_tensor.shape))
    except ValueError as e:
        raise ValueError(f"reshard: placements {list(placements)} for a tensor of shape "
                         f"{list(dist_tensor.shape)} on mesh {mesh.shape}: {e}") from None
    if not hasattr(_C.distributed, "reshard"):
        raise RuntimeError("reshard: this build of Oar has no communication backend (built without Gloo)")
    return _C.distributed.reshard(dist_tensor, mesh.shape, mesh.process_ids, mesh.dim_names, encoded)


def unshard_dtensor(dist_tensor):
    """The whole tensor of `dist_tensor` as an ordinary tensor on every process of its mesh
    (a reshard to Replicate, then the local value)."""
    if not isinstance(dist_tensor, Tensor) or not dist_tensor.is_dist():
        raise ValueError("unshard_dtensor: the input must be a dist tensor")
    mesh = dist_tensor.process_mesh
    from .placement_type import Replicate
    r = reshard(dist_tensor, mesh, [Replicate() for _ in range(mesh.ndim)])
    out = _C.dist.local_value(r)
    out.stop_gradient = dist_tensor.stop_gradient
    return out


def _replicate_params(layer, mesh):
    from .placement_type import Replicate
    for sub in layer.sublayers(include_self=True):
        for name, p in list(sub._parameters.items()):
            if p is not None and not p.is_dist():
                shard_tensor(p, mesh, [Replicate() for _ in range(mesh.ndim)])


def shard_layer(layer, process_mesh, shard_fn=None, input_fn=None, output_fn=None):
    """Lays `layer`'s parameters over `process_mesh`: shard_fn(name, sublayer, mesh) shards
    the ones it wants (replace them with shard_tensor(...)); the rest are replicated.
    input_fn(inputs, mesh) / output_fn(outputs, mesh) become forward pre/post hooks."""
    _check_mesh(process_mesh, "shard_layer")
    if shard_fn is not None:
        for name, sub in layer.named_sublayers(include_self=True):
            shard_fn(name, sub, process_mesh)
    _replicate_params(layer, process_mesh)
    if input_fn is not None:
        layer.register_forward_pre_hook(lambda _, inputs: input_fn(inputs, process_mesh))
    if output_fn is not None:
        layer.register_forward_post_hook(lambda _, inputs, outputs: output_fn(outputs, process_mesh))
    return layer


class _ShardingStage:
    """ZeRO-style sharding over one mesh axis (Note [Sharding stages] in
    docs/notes/distributed.md). sharding_mesh_dim: the axis (name or index); mesh: the mesh
    dense parameters are laid over (replicated) when the model's parameters are not dist."""
    stage = 0

    def __init__(self, sharding_mesh_dim=None, mesh=None):
        if sharding_mesh_dim is None:
            raise ValueError(f"{type(self).__name__}: sharding_mesh_dim (a mesh axis name or index) is required")
        if isinstance(sharding_mesh_dim, bool) or not isinstance(sharding_mesh_dim, (int, str)):
            raise TypeError(f"{type(self).__name__}: sharding_mesh_dim must be an int or str, got {sharding_mesh_dim!r}")
        if mesh is not None:
            _check_mesh(mesh, type(self).__name__)
        self.sharding_mesh_dim, self.mesh = sharding_mesh_dim, mesh

    def __call__(self, accumulator_name, param, accumulator):
        # Paddle's shard_fn protocol. Oar's accumulators take the layout the parameter has
        # during its update (split over the sharding axis), so they are already sharded.
        return accumulator

    def _axis(self, mesh):
        d, names = self.sharding_mesh_dim, list(mesh.dim_names)
        if isinstance(d, str):
            if d not in names:
                raise ValueError(f"{type(self).__name__}: sharding_mesh_dim {d!r} is not an axis of the mesh "
                                 f"(axes: {names})")
            return names.index(d)
        if not -len(names) <= d < len(names):
            raise ValueError(f"{type(self).__name__}: sharding_mesh_dim {d} is out of range for a mesh of "
                             f"{len(names)} axes")
        return d % len(names)


class ShardingStage1(_ShardingStage):
    """Optimizer states split over the sharding axis: each rank updates its slice of every
    parameter (gradients all-reduced as in data parallelism), then the slices are gathered."""
    stage = 1


class ShardingStage2(_ShardingStage):
    """Stage 1, with gradients reduce-scattered over the sharding axis instead of all-reduced."""
    stage = 2


class ShardingStage3(_ShardingStage):
    """Stage 2, with the parameters themselves stored split over the sharding axis; ops
    gather what they need (their SPMD rules), and gradients come back split."""
    stage = 3


def _shard_dim(p, axis, degree):
    """The tensor dim a parameter is split along on the sharding axis: the first one no other
    mesh axis splits and at least `degree` long (None: the parameter stays whole)."""
    taken = {q.get_dim() for i, q in enumerate(p.placements) if q.is_shard() and i != axis}
    for d, n in enumerate(p._global_shape):
        if d not in taken and n >= degree:
            return d
    return None


def _relayout(p, placements):
    """Lays dist tensor p out as `placements` in place (same object): reshard, then its local
    value and metadata become the result's."""
    from ...autograd import no_grad
    with no_grad():
        r = reshard(p, p.process_mesh, placements)
    _C.dist.set_local_value(p, _C.dist.local_value(r))
    _C.dist.set_placements(p, _encode_all(placements, "shard_optimizer"), False)


class _ShardOptimizer:
    """An optimizer whose step runs as a sharding stage: the parameters with a slice on the
    sharding axis are updated slice by slice. Everything else is the wrapped optimizer's."""

    def __init__(self, optimizer, stage):
        self._inner_opt, self._stage = optimizer, stage
        self._plan = {}  # id(param) -> (placements to update in, placements to return to)
        params = list(getattr(optimizer, "_parameter_list", None) or [])
        mesh = stage.mesh
        for p in params:
            if not p.is_dist():
                if mesh is None:
                    raise ValueError(f"shard_optimizer: parameter {p.name!r} is not a dist tensor; give "
                                     f"{type(stage).__name__}(..., mesh=...) to lay dense parameters over")
                shard_tensor(p, mesh, [Replicate() for _ in range(mesh.ndim)])
        for p in params:
            axis = stage._axis(p.process_mesh)
            placements = list(p.placements)
            if not placements[axis].is_replicated():
                continue  # already split over that axis: its update is per slice anyway
            d = _shard_dim(p, axis, p.process_mesh.shape[axis])
            if d is None:
                continue
            split = placements[:axis] + [Shard(d)] + placements[axis + 1:]
            if stage.stage == 3:
                _relayout(p, split)  # stored split; grads and states follow its layout
                continue
            if stage.stage == 2:
                _C.dist.set_placements(p, _encode_all(split, "shard_optimizer"), True)
            self._plan[id(p)] = (split, placements)

    def __getattr__(self, name):
        return getattr(self._inner_opt, name)

    def step(self):
        opt = self._inner_opt
        self._step_pairs([(p, p.grad) for p in opt._parameter_list if not p.stop_gradient and p.grad is not None])

    def _step_pairs(self, pairs, relayout=None):
        """The sharded update of [(parameter, gradient)]; `relayout(p, placements)` lays a
        parameter out in place (DistModel's trace passes one that tells the tracer)."""
        from ...autograd import no_grad
        relayout = relayout or _relayout
        opt = self._inner_opt
        pairs = list(pairs)
        with no_grad():
            updated = []
            for i, (p, g) in enumerate(pairs):
                plan = self._plan.get(id(p))
                if plan is None:
                    continue
                split, whole = plan
                if g.placements != split:  # stage 1: a local slice of the all-reduced gradient
                    g = reshard(g, p.process_mesh, split)
                pairs[i] = (p, g)
                relayout(p, split)  # a local slice: no communication
                updated.append(p)
            try:
                opt._apply_pairs(pairs)
            finally:
                for p in updated:
                    relayout(p, self._plan[id(p)][1])  # all-gather the updated slices

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        self.step()
        return None, [(p, p.grad) for p in self._inner_opt._parameter_list if p.grad is not None]


def shard_optimizer(optimizer, shard_fn=None, gradient_accumulation_steps=1):
    """The optimizer over dist parameters. Each parameter is updated on its own shard with
    its gradient laid out as the parameter (the dist layer reshards leaf gradients), and
    the states it creates follow the parameter's layout. shard_fn=ShardingStage1/2/3(axis)
    shards states, gradients and parameters over that mesh axis (Note [Sharding stages])."""
    if gradient_accumulation_steps != 1:
        raise NotImplementedError("shard_optimizer: gradient_accumulation_steps > 1 is not implemented yet")
    # The parameters may lie on different meshes (pipeline stages): each is updated on its own.
    if shard_fn is None:
        return optimizer
    if not isinstance(shard_fn, _ShardingStage):
        raise NotImplementedError(f"shard_optimizer: a custom shard_fn ({type(shard_fn).__name__}) is not "
                                  "supported; use ShardingStage1/2/3 or None")
    return _ShardOptimizer(optimizer, shard_fn)


# ---- Tensor methods (Paddle's dist tensor API)
def _is_dist(self):
    return _C.dist.is_dist(self)


def _placements(self):
    meta = _C.dist.get_dist_meta(self)
    return None if meta is None else [_decode(*p) for p in meta[3]]


def _process_mesh(self):
    meta = _C.dist.get_dist_meta(self)
    return None if meta is None else ProcessMesh(shape=meta[0], process_ids=meta[1], dim_names=meta[2])


def _local_value(self):
    if not _C.dist.is_dist(self):
        raise ValueError("_local_value: the tensor is not a dist tensor (see shard_tensor)")
    return _C.dist.local_value(self)


def _global_shape(self):
    meta = _C.dist.get_dist_meta(self)
    return list(self.shape) if meta is None else list(meta[4])


Tensor.is_dist = _is_dist
Tensor.placements = property(_placements)
Tensor.process_mesh = property(_process_mesh)
Tensor._local_value = _local_value
Tensor._global_shape = property(_global_shape)
