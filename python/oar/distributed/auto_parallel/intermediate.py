"""parallelize and its tensor-parallel plans (Paddle's intermediate auto-parallel API):
ColWiseParallel and RowWiseParallel lay a Linear's (or an Embedding's) parameters over the
mesh's "mp" axis; the dist layer does the rest (Note [Dist layer] in docs/notes/distributed.md)."""
import fnmatch

from .api import (ShardingStage1, ShardingStage2, ShardingStage3, _check_mesh, _global_trace, reshard, shard_layer,
                  shard_optimizer, shard_tensor)
from .placement_type import Replicate, Shard
from .pipeline_parallel import SplitPoint  # noqa: F401  (paddle.distributed.SplitPoint)
from .process_mesh import get_mesh

__all__ = ["parallelize", "ColWiseParallel", "RowWiseParallel", "PlanBase", "SplitPoint", "SequenceParallelBegin",
           "SequenceParallelEnd", "SequenceParallelEnable", "SequenceParallelDisable"]


def _mp_axis(mesh, op):
    if "mp" in mesh.dim_names:
        return mesh.dim_names.index("mp")
    if mesh.ndim == 1:
        return 0
    raise ValueError(f"{op}: the mesh {mesh.dim_names} has no axis named 'mp' for tensor parallelism")


def _on_axis(mesh, axis, placement):
    out = [Replicate() for _ in range(mesh.ndim)]
    out[axis] = placement
    return out


def _kind(layer, plan):
    from ... import nn
    if isinstance(layer, nn.Linear):
        return "linear"
    if isinstance(layer, nn.Embedding):
        return "embedding"
    raise TypeError(f"{plan}: applies to nn.Linear or nn.Embedding layers, got {type(layer).__name__}")


class PlanBase:
    """How one sublayer is split for tensor parallelism."""

    def apply(self, layer, mesh, axis):
        raise NotImplementedError


class ColWiseParallel(PlanBase):
    """Splits a Linear's output features (weight [in, out] -> Shard(1), bias -> Shard(0)) or an
    Embedding's hidden dim over the mp axis. The input is used replicated; the output stays
    split along its last dim unless gather_output=True."""

    def __init__(self, gather_output=False):
        self.gather_output = gather_output

    def apply(self, layer, mesh, axis):
        kind = _kind(layer, "ColWiseParallel")
        shard_tensor(layer.weight, mesh, _on_axis(mesh, axis, Shard(1)))
        if kind == "linear" and getattr(layer, "bias", None) is not None:
            shard_tensor(layer.bias, mesh, _on_axis(mesh, axis, Shard(0)))
        if self.gather_output:
            def gather(_, inputs, out):
                whole = [Replicate() for _ in range(mesh.ndim)]
                return reshard(out, mesh, whole) if out.is_dist() or _global_trace() else out
            layer.register_forward_post_hook(gather)


class RowWiseParallel(PlanBase):
    """Splits a Linear's input features (weight [in, out] -> Shard(0); bias replicated) over the
    mp axis. The input is expected split along its last dim (a ColWiseParallel layer's output);
    is_input_parallel=False reshards it so first. The matmul's output is Partial; adding the
    bias (or the next op that needs it whole) all-reduces it."""

    def __init__(self, is_input_parallel=True):
        self.is_input_parallel = is_input_parallel

    def apply(self, layer, mesh, axis):
        kind = _kind(layer, "RowWiseParallel")
        if kind == "embedding":
            shard_tensor(layer.weight, mesh, _on_axis(mesh, axis, Shard(0)))
            return
        shard_tensor(layer.weight, mesh, _on_axis(mesh, axis, Shard(0)))
        if not self.is_input_parallel:
            def split_input(_, inputs):
                x = inputs[0]
                if not x.is_dist():
                    x = shard_tensor(x, mesh, [Replicate() for _ in range(mesh.ndim)])
                return (reshard(x, mesh, _on_axis(mesh, axis, Shard(len(x.shape) - 1))),) + tuple(inputs[1:])
            layer.register_forward_pre_hook(split_input)


def _swap01(t):
    """[b, s, ...] <-> [s, b, ...]."""
    from ... import transpose
    if len(t.shape) < 2:
        raise ValueError(f"sequence parallel: a tensor of rank {len(t.shape)} has no [b, s] / [s, b] dims")
    return transpose(t, [1, 0] + list(range(2, len(t.shape))))


def _dist_on(t, mesh):
    from ..._C import Tensor
    if isinstance(t, Tensor) and not t.is_dist():
        return shard_tensor(t, mesh, [Replicate() for _ in range(mesh.ndim)])
    return t


def _map_first(values, fn):
    """fn applied to the first tensor of a layer's inputs or outputs (a tensor or a tuple/list)."""
    if isinstance(values, (list, tuple)):
        if not values:
            return values
        return type(values)([fn(values[0])] + list(values[1:]))
    return fn(values)


def _seq_split(t, mesh, axis):
    return reshard(_dist_on(t, mesh), mesh, _on_axis(mesh, axis, Shard(0)))


def _seq_gather(t, mesh):
    return reshard(_dist_on(t, mesh), mesh, [Replicate() for _ in range(mesh.ndim)])


def _check_transpose_flag(need_transpose, plan):
    if not isinstance(need_transpose, bool):
        raise TypeError(f"{plan}: need_transpose must be a bool, got {need_transpose!r}")


class SequenceParallelBegin(PlanBase):
    """Marks the last layer before the sequence-parallel region: its output [b, s, h]
    (need_transpose=True; [s, b, h] otherwise) becomes [s, b, h] split along s (dim 0)
    over the mp axis. Do not mark a layer inside the region with it."""

    def __init__(self, need_transpose=True):
        _check_transpose_flag(need_transpose, "SequenceParallelBegin")
        self.need_transpose = need_transpose

    def apply(self, layer, mesh, axis):
        def begin(_, inputs, out):
            def one(t):
                t = _dist_on(t, mesh)
                return _seq_split(_swap01(t) if self.need_transpose else t, mesh, axis)
            return _map_first(out, one)
        layer.register_forward_post_hook(begin)


class SequenceParallelEnd(PlanBase):
    """Marks the first layer after the region: its input [s/mp, b, h] is gathered over the
    mp axis and (need_transpose=True) transposed back to [b, s, h]."""

    def __init__(self, need_transpose=True):
        _check_transpose_flag(need_transpose, "SequenceParallelEnd")
        self.need_transpose = need_transpose

    def apply(self, layer, mesh, axis):
        def end(_, inputs):
            def one(t):
                t = _seq_gather(t, mesh)
                return _swap01(t) if self.need_transpose else t
            return _map_first(tuple(inputs), one)
        layer.register_forward_pre_hook(end)


class SequenceParallelEnable(PlanBase):
    """Runs the layer sequence-parallel inside the region: its input is split along dim 0
    (the sequence dim of the region's [s, b, h] layout) over the mp axis; its parameters
    stay replicated (their gradients are summed over the axis by the dist layer)."""

    def apply(self, layer, mesh, axis):
        layer.register_forward_pre_hook(lambda _, inputs: _map_first(tuple(inputs),
                                                                     lambda t: _seq_split(t, mesh, axis)))


class SequenceParallelDisable(PlanBase):
    """Runs the layer on the whole sequence inside the region: its input [s/mp, b, h] is
    gathered (and with need_transpose=True transposed to [b, s, h]); its output is
    transposed back if needed and split along s again."""

    def __init__(self, need_transpose=True):
        _check_transpose_flag(need_transpose, "SequenceParallelDisable")
        self.need_transpose = need_transpose

    def apply(self, layer, mesh, axis):
        def pre(_, inputs):
            def one(t):
                t = _seq_gather(t, mesh)
                return _swap01(t) if self.need_transpose else t
            return _map_first(tuple(inputs), one)

        def post(_, inputs, out):
            def one(t):
                t = _dist_on(t, mesh)
                return _seq_split(_swap01(t) if self.need_transpose else t, mesh, axis)
            return _map_first(out, one)
        layer.register_forward_pre_hook(pre)
        layer.register_forward_post_hook(post)


def _sharding_level(dp_config, mesh):
    """dp_config's sharding_level (0: plain data parallel over the mesh's `dp` axis; 1/2/3:
    ShardingStage1/2/3 over it), or None without dp_config."""
    if not dp_config:
        return None
    if not isinstance(dp_config, dict) or set(dp_config) - {"sharding_level"}:
        raise ValueError(f"parallelize: dp_config must be {{'sharding_level': 0..3}}, got {dp_config!r}")
    level = dp_config.get("sharding_level", 0)
    if isinstance(level, bool) or level not in (0, 1, 2, 3):
        raise ValueError(f"parallelize: dp_config sharding_level must be 0, 1, 2 or 3, got {level!r}")
    if "dp" not in mesh.dim_names:
        raise ValueError(f"parallelize: dp_config needs a mesh axis named 'dp' (axes: {list(mesh.dim_names)})")
    return level


def parallelize(model, optimizer=None, mesh=None, config=None):
    """Applies config to `model` on `mesh` (default: get_mesh()) and returns (model, optimizer):
    pp_config {'split_spec': a LayerList's name or {layer name: SplitPoint}, 'global_spec':
    a layer name} cuts the model into stages on the sub-meshes of the "pp" axis;
    mp_config {'parallelize_plan': {sublayer name or fnmatch pattern: ColWiseParallel() /
    RowWiseParallel()}} splits those layers over the "mp" axis (of their stage's mesh);
    dp_config {'sharding_level': 0..3} shards the optimizer over the "dp" axis. The other
    parameters are replicated on their stage's mesh."""
    from .pipeline_parallel import assign_stages
    mesh = mesh if mesh is not None else get_mesh()
    if mesh is None:
        raise ValueError("parallelize: no mesh: pass mesh= or call dist.set_mesh first")
    _check_mesh(mesh, "parallelize")
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"parallelize: config must be a dict, got {type(config).__name__}")
    config = dict(config or {})
    unknown = set(config) - {"mp_config", "dp_config", "pp_config"}
    if unknown:
        raise ValueError(f"parallelize: unknown config keys {sorted(unknown)}")
    level = _sharding_level(config.get("dp_config"), mesh)
    stages = assign_stages(model, config["pp_config"], mesh) if config.get("pp_config") else None

    def mesh_of(name):
        return mesh if stages is None else stages.get(name, mesh)
    plan = (config.get("mp_config") or {}).get("parallelize_plan", {})
    if plan:
        named = dict(model.named_sublayers(include_self=False))
        for pattern, plans in plan.items():
            plans = list(plans) if isinstance(plans, (list, tuple)) else [plans]
            for p in plans:
                if not isinstance(p, PlanBase):
                    raise TypeError(f"parallelize: the plan for {pattern!r} must be a plan (ColWiseParallel(), "
                                    f"RowWiseParallel(), SequenceParallel*()) or a list of them, got {p!r}")
            hits = [n for n in named if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                raise ValueError(f"parallelize: no sublayer matches {pattern!r} (sublayers: {sorted(named)[:8]}...)")
            for n in hits:
                m = mesh_of(n)
                for p in plans:
                    p.apply(named[n], m, _mp_axis(m, "parallelize"))
    if stages is None:
        shard_layer(model, mesh)
    else:  # each layer's own parameters on its stage's mesh (the model's own on stage 0's)
        for name, sub in [("", model)] + list(model.named_sublayers(include_self=False)):
            m = mesh_of(name)
            for p in sub._parameters.values():
                if p is not None and not p.is_dist():
                    shard_tensor(p, m, [Replicate() for _ in range(m.ndim)])
    if optimizer is not None:
        stage = {1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}.get(level)
        optimizer = shard_optimizer(optimizer, stage("dp", mesh) if stage else None)
    return model, optimizer
