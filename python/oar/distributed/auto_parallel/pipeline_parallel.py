"""parallelize's pp_config (Paddle's intermediate pipeline parallelism): the model's sublayers
are cut into stages at split points, each stage's parameters live on its sub-mesh of the
mesh's "pp" axis, and a split layer's outputs are resharded onto the next stage's mesh. A
process runs only the ops of its own stage: the dist layer skips ops whose mesh does not
hold it (Note [Dist layer], "Outside the mesh"), and the cross-mesh reshard moves the
activations forward and their gradients back (Note [Pipeline parallel] in
docs/notes/distributed.md)."""
from enum import Enum

from .placement_type import Replicate

__all__ = ["SplitPoint"]


class SplitPoint(Enum):
    """Where a split_spec layer cuts: BEGINNING starts a new stage with the layer, END ends
    the stage after it."""
    BEGINNING = 0
    END = 1


def stage_meshes(mesh):
    """The sub-mesh of each index along the mesh's "pp" axis (the other axes kept)."""
    if "pp" not in mesh.dim_names:
        raise ValueError(f"parallelize: pp_config needs a mesh axis named 'pp' (axes: {list(mesh.dim_names)})")
    degree = mesh.get_dim_size("pp")
    if mesh.ndim == 1:
        return [mesh[i] for i in range(degree)]
    return [mesh.get_mesh_with_dim("pp", i) for i in range(degree)]


def _split_points(model, split_spec, degree):
    named = dict(model.named_sublayers(include_self=False))
    if isinstance(split_spec, str):
        if split_spec not in named:
            raise ValueError(f"parallelize: pp_config split_spec {split_spec!r} is not a sublayer of the model")
        n = len(named[split_spec])
        if n < degree:
            raise ValueError(f"parallelize: pp_config split_spec {split_spec!r} has {n} layers for {degree} stages")
        per = n // degree  # as Paddle: the last stage takes what does not divide
        return {f"{split_spec}.{i * per - 1}": SplitPoint.END for i in range(1, degree)}
    if not isinstance(split_spec, dict):
        raise TypeError("parallelize: pp_config split_spec must be a LayerList's name or a dict "
                        f"{{layer name: SplitPoint}}, got {type(split_spec).__name__}")
    for name, point in split_spec.items():
        if name not in named:
            raise ValueError(f"parallelize: pp_config split point {name!r} is not a sublayer of the model")
        if not isinstance(point, SplitPoint):
            raise TypeError(f"parallelize: pp_config split point {name!r} must be a SplitPoint, got {point!r}")
    if len(split_spec) != degree - 1:
        raise ValueError(f"parallelize: pp_config has {len(split_spec)} split points for a 'pp' axis of "
                         f"{degree} stages (need {degree - 1})")
    return dict(split_spec)


def assign_stages(model, pp_config, mesh):
    """{sublayer name ('' for the model): its stage's mesh}, after validating pp_config and
    installing the hooks that move the split layers' outputs (or inputs) to the next stage."""
    if not isinstance(pp_config, dict) or set(pp_config) - {"split_spec", "global_spec"}:
        raise ValueError("parallelize: pp_config must be {'split_spec': ..., 'global_spec': ...}, got "
                         f"{pp_config!r}")
    if "split_spec" not in pp_config:
        raise ValueError("parallelize: pp_config needs 'split_spec'")
    meshes = stage_meshes(mesh)
    points = _split_points(model, pp_config["split_spec"], len(meshes))
    global_spec = pp_config.get("global_spec")
    names = [n for n, _ in model.named_sublayers(include_self=False)]
    named = dict(model.named_sublayers(include_self=False))
    if global_spec is not None and global_spec not in named:
        raise ValueError(f"parallelize: pp_config global_spec {global_spec!r} is not a sublayer of the model")
    stage, pending, out = 0, None, {"": meshes[0]}
    for n in names:
        if pending is not None and not n.startswith(pending + "."):
            stage, pending = stage + 1, None
        if points.get(n) is SplitPoint.BEGINNING:
            stage += 1
            if stage >= len(meshes):
                raise ValueError(f"parallelize: split point {n!r} starts stage {stage}, but the 'pp' axis has "
                                 f"{len(meshes)} stages")
            _move_inputs(named[n], meshes[stage], meshes[stage - 1])
        out[n] = meshes[stage]
        if points.get(n) is SplitPoint.END:
            if stage + 1 >= len(meshes):
                raise ValueError(f"parallelize: split point {n!r} leaves no stage after it ({len(meshes)} stages)")
            _move_outputs(named[n], meshes[stage + 1], meshes[stage])
            pending = n
    if stage >= len(meshes):
        raise ValueError(f"parallelize: pp_config's split points make {stage + 1} stages for {len(meshes)}")
    if global_spec is not None:
        layer = named[global_spec]
        trainable = [p.name for p in layer.parameters() if not p.stop_gradient]
        if trainable:
            raise NotImplementedError(f"parallelize: pp_config global_spec {global_spec!r} has trainable parameters "
                                      f"{trainable[:4]}; a global layer runs on every stage and its parameters "
                                      "would need gradients from all of them (not implemented)")
        for sub in [global_spec] + [n for n in names if n.startswith(global_spec + ".")]:
            out[sub] = mesh
        layer.register_forward_post_hook(lambda _, inputs, output: _as_local(output))
    return out


def _map(value, fn):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    return fn(value)


def _to_mesh(t, mesh, src=None):
    """`t` resharded onto `mesh` (the same placements where they fit). In DistModel's global
    trace `t` is an ordinary tensor: a move from where the trace knows it lives, else from
    `src` (static_pipeline.move)."""
    from ..._C import Tensor
    from .api import _global_trace, reshard
    if isinstance(t, Tensor) and _global_trace():
        from .static_pipeline import move
        return move(t, mesh, src)
    if not isinstance(t, Tensor) or not t.is_dist() or t.process_mesh == mesh:
        return t
    placements = t.placements
    if len(placements) != mesh.ndim:
        placements = [Replicate() for _ in range(mesh.ndim)]
    return reshard(t, mesh, placements)


def _move_outputs(layer, mesh, src):
    layer.register_forward_post_hook(lambda _, inputs, output: _map(output, lambda t: _to_mesh(t, mesh, src)))


def _move_inputs(layer, mesh, src):
    layer.register_forward_pre_hook(lambda _, inputs: _map(tuple(inputs), lambda t: _to_mesh(t, mesh, src)))


def _as_local(output):
    """A global layer's outputs as ordinary tensors (each stage takes them as replicated)."""
    from ..._C import Tensor
    from .api import reshard

    def one(t):
        if not isinstance(t, Tensor) or not t.is_dist():
            return t
        whole = reshard(t, t.process_mesh, [Replicate() for _ in range(t.process_mesh.ndim)])
        return whole._local_value()
    return _map(output, one)
