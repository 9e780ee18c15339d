"""Dist tensors in one process: shard_tensor, dtensor_from_local, dtensor_from_fn, the Tensor
methods (is_dist, placements, process_mesh, _local_value) and SPMD rule inference.

A dist tensor is an ordinary oar.Tensor whose data is this process's local shard, with the
mesh, placements and global shape in its dist slot (TensorImpl::dist). Without a launcher this
process is rank 0; under one, every rank cuts its own shard from the global value it was given
(no communication). reshard moves data between layouts over the process groups (Note [Reshard]);
ops on dist tensors run through the dist dispatch layer (Note [Dist layer]); shard_layer and
shard_optimizer lay a model and its optimizer over a mesh."""
import numpy as np

from ... import _C
from ..._C import Tensor
from .placement_type import _decode, _encode_all
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
    coord = [int(c[0]) for c in np.nonzero(mesh.mesh == rank)]
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
    changes. The mesh must be the tensor's own (cross-mesh reshard is not supported yet)."""
    _check_mesh(mesh, "reshard")
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
    def __init__(self, mesh_dim=None, mesh=None):
        self.mesh_dim, self.mesh = mesh_dim, mesh


class ShardingStage1(_ShardingStage):
    """Optimizer states split along a mesh axis (not implemented yet: shard_optimizer says so)."""


class ShardingStage2(_ShardingStage):
    """Stage 1 plus gradients split (not implemented yet)."""


class ShardingStage3(_ShardingStage):
    """Stage 2 plus parameters split (not implemented yet)."""


def shard_optimizer(optimizer, shard_fn=None, gradient_accumulation_steps=1):
    """The optimizer over dist parameters. Each parameter is updated on its own shard with
    its gradient laid out as the parameter (the dist layer reshards leaf gradients), and
    the states it creates (zeros_like of a parameter) follow the parameter's placements.
    ShardingStage1/2/3 (states, gradients, parameters split over a data-parallel axis) are
    not implemented yet."""
    if shard_fn is not None:
        raise NotImplementedError(f"shard_optimizer: {type(shard_fn).__name__} (ZeRO sharding of optimizer "
                                  "states) is not implemented yet; pass shard_fn=None")
    if gradient_accumulation_steps != 1:
        raise NotImplementedError("shard_optimizer: gradient_accumulation_steps > 1 is not implemented yet")
    flat = list(getattr(optimizer, "_parameter_list", None) or [])
    meshes = {repr(p.process_mesh) for p in flat if p.is_dist()}
    if len(meshes) > 1:
        raise ValueError(f"shard_optimizer: the parameters lie on different meshes: {sorted(meshes)}")
    return optimizer


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
