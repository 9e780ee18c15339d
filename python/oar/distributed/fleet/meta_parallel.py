"""Paddle's fleet.meta_parallel.PipelineLayer and LayerDesc on auto-parallel sub-meshes: a
model given as a list of layers, cut into num_stages * num_virtual_pipeline_stages chunks by
`seg_method`, chunk c laid on stage c % num_stages's mesh. Its forward runs the chunks in
order, moving each chunk's input onto its mesh; DistModel's VPP schedule runs the chunks as
its virtual stages (Note [VPP chunks] in docs/notes/distributed.md)."""
import re

from ... import nn

__all__ = ["LayerDesc", "PipelineLayer"]


class LayerDesc:
    """A layer to build later: layer_func(*inputs, **kwargs) (Paddle's LayerDesc)."""

    def __init__(self, layer_func, *inputs, **kwargs):
        if not (isinstance(layer_func, type) and issubclass(layer_func, nn.Layer)):
            raise TypeError(f"LayerDesc: layer_func must be an nn.Layer subclass, got {layer_func!r}")
        self.layer_func, self.inputs, self.kwargs = layer_func, inputs, kwargs

    def build_layer(self):
        return self.layer_func(*self.inputs, **self.kwargs)

    def __repr__(self):
        return f"LayerDesc({self.layer_func.__name__})"


def segment(items, parts, seg_method):
    """Paddle's SegmentLayers: the start index of each of `parts` parts, plus len(items).
    "uniform": equal counts, the remainder going one each to the last parts; "layer:<regex>":
    each part starts at a layer whose class name matches, the matches divided evenly (layers
    before the first match join part 0)."""
    n = len(items)
    if parts > n:
        raise ValueError(f"PipelineLayer: {n} layers cannot make {parts} chunks (num_stages x "
                         "num_virtual_pipeline_stages)")
    if seg_method == "uniform":
        size, extra = divmod(n, parts)
        bounds = [0]
        for i in range(1, parts):
            bounds.append(bounds[-1] + size + (1 if i > parts - extra else 0))
        return bounds + [n]
    if isinstance(seg_method, str) and seg_method.startswith("layer:"):
        pattern = re.compile(seg_method[len("layer:"):], re.IGNORECASE)
        hits = [i for i, it in enumerate(items) if pattern.search(type(_built(it)).__name__)]
        if len(hits) < parts or len(hits) % parts:
            raise ValueError(f"PipelineLayer: seg_method {seg_method!r} matches {len(hits)} layers, which do not "
                             f"divide into {parts} chunks")
        per = len(hits) // parts
        return [0] + [hits[j * per] for j in range(1, parts)] + [n]
    raise ValueError(f"PipelineLayer: seg_method must be 'uniform' or 'layer:<class name regex>', got {seg_method!r}")


def _built(item):
    return item.build_layer() if isinstance(item, LayerDesc) else item


class _Chunk(nn.Layer):
    """One chunk: moves its input onto its mesh, then runs its layers (or functions) in turn."""

    def __init__(self, items, mesh):
        super().__init__()
        self.run_function = nn.LayerList([it for it in items if isinstance(it, nn.Layer)])
        self._items, self.mesh = items, mesh

    def forward(self, *args):
        from ..auto_parallel.pipeline_parallel import _map, _to_mesh
        x = _map(args, lambda t: _to_mesh(t, self.mesh))
        for item in self._items:
            x = item(*x) if isinstance(x, tuple) else item(x)
        from ..auto_parallel.api import _global_trace
        if _global_trace():  # DistModel's global trace: the next chunk moves it from this mesh
            from ..auto_parallel.placement_type import Replicate
            from ..auto_parallel.static_global import Layout
            from ..auto_parallel.static_pipeline import hint
            _map(x, lambda t: hint(t, Layout(self.mesh, [Replicate() for _ in range(self.mesh.ndim)])))
        return x


class PipelineLayer(nn.Layer):
    """`layers` (nn.Layers, LayerDescs or functions) cut into num_stages *
    num_virtual_pipeline_stages chunks by `seg_method`; chunk c is laid (replicated, unless its
    parameters are dist tensors already) on stage c % num_stages's mesh. The stage meshes are
    the sub-meshes along the 'pp' axis of `mesh` (default: dist.get_mesh() when it has one,
    else the ranks 0..num_stages-1, one per stage). `loss_fn` is kept for the caller
    (DistModel takes its loss from to_static). `topology`, recompute: not supported."""

    def __init__(self, layers, num_stages=None, topology=None, loss_fn=None, seg_method="uniform",
                 recompute_interval=0, recompute_ctx=None, num_virtual_pipeline_stages=None, mesh=None):
        super().__init__()
        from ..auto_parallel.pipeline_parallel import stage_meshes
        from ..auto_parallel.process_mesh import ProcessMesh, get_mesh
        if topology is not None or recompute_interval:
            raise NotImplementedError("PipelineLayer: topology and recompute_interval are not supported (the stages "
                                      "come from the mesh's 'pp' axis)")
        if not isinstance(layers, (list, tuple)) or not layers:
            raise TypeError(f"PipelineLayer: layers must be a non-empty list, got {type(layers).__name__}")
        for it in layers:
            if not (isinstance(it, (nn.Layer, LayerDesc)) or callable(it)):
                raise TypeError(f"PipelineLayer: a layer must be an nn.Layer, a LayerDesc or a function, got {it!r}")
        if mesh is None:
            mesh = get_mesh()
            if mesh is None or "pp" not in mesh.dim_names:
                if num_stages is None:
                    raise ValueError("PipelineLayer: give num_stages, or a mesh with a 'pp' axis")
                mesh = ProcessMesh(list(range(int(num_stages))), dim_names=["pp"])
        stages = stage_meshes(mesh)
        if num_stages is not None and num_stages != len(stages):
            raise ValueError(f"PipelineLayer: num_stages {num_stages} differs from the mesh's 'pp' axis size "
                             f"{len(stages)}")
        vpp = 1 if num_virtual_pipeline_stages is None else num_virtual_pipeline_stages
        if isinstance(vpp, bool) or not isinstance(vpp, int) or vpp < 1:
            raise ValueError(f"PipelineLayer: num_virtual_pipeline_stages must be a positive int, got {vpp!r}")
        self._num_stages, self._num_virtual_pipeline_stages, self._loss_fn = len(stages), vpp, loss_fn
        bounds = segment(list(layers), len(stages) * vpp, seg_method)
        self.segment_parts = bounds
        from ..auto_parallel.api import shard_layer
        chunks = []
        for c in range(len(bounds) - 1):
            items = [_built(it) for it in layers[bounds[c]:bounds[c + 1]]]
            m = stages[c % len(stages)]
            for it in items:
                if isinstance(it, nn.Layer):
                    shard_layer(it, m)
            chunks.append(_Chunk(items, m))
        self.chunks = nn.LayerList(chunks)

    def get_num_virtual_stages(self):
        return self._num_virtual_pipeline_stages

    def get_num_stages(self):
        return self._num_stages

    def vpp_chunks(self):
        """[(the chunk's mesh ids, [the chunk])] in model order, for DistModel's VPP."""
        return [(tuple(c.mesh.process_ids), [c]) for c in self.chunks]

    def forward(self, *args):
        x = args
        for c in self.chunks:
            x = c(*x) if isinstance(x, tuple) else c(x)
        return x
