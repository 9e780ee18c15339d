"""parallelize and its tensor-parallel plans (Paddle's intermediate auto-parallel API):
ColWiseParallel and RowWiseParallel lay a Linear's (or an Embedding's) parameters over the
mesh's "mp" axis; the dist layer does the rest (Note [Dist layer] in docs/notes/distributed.md)."""
import fnmatch

from .api import (ShardingStage1, ShardingStage2, ShardingStage3, _check_mesh, reshard, shard_layer, shard_optimizer,
                  shard_tensor)
from .placement_type import Replicate, Shard
from .process_mesh import get_mesh

__all__ = ["parallelize", "ColWiseParallel", "RowWiseParallel", "PlanBase"]


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
                return reshard(out, mesh, [Replicate() for _ in range(mesh.ndim)]) if out.is_dist() else out
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
    """Applies config["mp_config"]["parallelize_plan"] ({sublayer name or fnmatch pattern:
    ColWiseParallel() / RowWiseParallel()}) to `model` on `mesh` (default: get_mesh()),
    replicates the other parameters and returns (model, optimizer)."""
    mesh = mesh if mesh is not None else get_mesh()
    if mesh is None:
        raise ValueError("parallelize: no mesh: pass mesh= or call dist.set_mesh first")
    _check_mesh(mesh, "parallelize")
    config = dict(config or {})
    unknown = set(config) - {"mp_config", "dp_config", "pp_config"}
    if unknown:
        raise ValueError(f"parallelize: unknown config keys {sorted(unknown)}")
    if config.get("pp_config"):
        raise NotImplementedError("parallelize: pp_config is not implemented yet (dp_config and mp_config are)")
    level = _sharding_level(config.get("dp_config"), mesh)
    plan = (config.get("mp_config") or {}).get("parallelize_plan", {})
    if plan:
        axis = _mp_axis(mesh, "parallelize")
        named = dict(model.named_sublayers(include_self=False))
        for pattern, p in plan.items():
            if not isinstance(p, PlanBase):
                raise TypeError(f"parallelize: the plan for {pattern!r} must be ColWiseParallel() or "
                                f"RowWiseParallel(), got {p!r}")
            hits = [n for n in named if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                raise ValueError(f"parallelize: no sublayer matches {pattern!r} (sublayers: {sorted(named)[:8]}...)")
            for n in hits:
                p.apply(named[n], mesh, axis)
    shard_layer(model, mesh)
    if optimizer is not None:
        stage = {1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}.get(level)
        optimizer = shard_optimizer(optimizer, stage("dp", mesh) if stage else None)
    return model, optimizer
