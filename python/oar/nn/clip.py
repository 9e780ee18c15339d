"""Gradient clipping (Paddle's ClipGradByValue, ClipGradByNorm, ClipGradByGlobalNorm).
An optimizer calls clip(params_grads) with a list of (param, grad) before its update;
parameters created with ParamAttr(need_clip=False) pass through unchanged."""

import math

from .. import _C
from ..autograd import no_grad

_ops = _C.ops


def _as_float(g):
    """g itself when float32/float64, else g cast to float32 (the sums of 16-bit gradients)."""
    return g if g.dtype in (_C.DataType.float32, _C.DataType.float64) else _ops.cast(g, _C.DataType.float32)


def _sq_sum(g):
    """The sum of squares of g as a Python float: p_norm's one pass over g squared. (g * g).sum()
    wrote a temporary the size of g first: 3.4 against 1.3 ms for 9.4M float32 gradients."""
    norm = float(_ops.p_norm(_as_float(g), 2.0, [], False))
    return norm * norm


def _need_clip(p):
    return getattr(p, "need_clip", True)


def _tracing():
    from .. import _trace_state  # jit's active tracers, read without importing jit (above nn)
    return bool(_trace_state.active)


def _as_ops(grads):
    """Whether the global norm is computed as tensor ops: while a program is traced (a
    DistModel step), or for dist gradients (the eager dist step, so that it matches the
    compiled one; on several meshes, pipeline stages, the only way every stage gets the
    norm). Plain eager gradients keep the Python-float path."""
    return _tracing() or all(g.is_dist() for g in grads)


def _to_replicate(s, mesh=None):
    """`s` resharded to Replicate on `mesh` (default: its own; another mesh is a cross-mesh
    move, a pipeline stage's send/recv): an all_reduce or send_recv in a traced program,
    through the binding dist.reshard calls, so that nn (below distributed and jit) imports
    neither. (0, -1, 0) is Replicate() as dist's _encode_all writes it."""
    m = s.process_mesh if mesh is None else mesh
    return _C.distributed.reshard(s, m.shape, m.process_ids, m.dim_names, [(0, -1, 0)] * len(m.shape))


# While DistModel traces its global program (Note [DistModel]) the gradients are ordinary
# tensors: oar.distributed sets this to an object whose mesh_of(t), sum_layout(g),
# replicate(s, mesh) and move(t, mesh, from_mesh) say where the trace keeps a tensor, how a
# gradient's sum of squares is laid out, and make a sum Replicate or move it between stages.
_global_trace = None


def _mesh_of(t):
    if _global_trace is not None:
        return _global_trace.mesh_of(t)
    return t.process_mesh if t.is_dist() else None


def _sum_layout(s, g):
    """The layout of g's sum of squares `s` (None: the same on every process)."""
    if _global_trace is not None:
        return _global_trace.sum_layout(g)
    return tuple(map(str, s.placements)) if s.is_dist() and not all(q.is_replicated() for q in s.placements) \
        else None


def _mesh_key(t):
    m = _mesh_of(t)
    return (tuple(m.shape), tuple(m.process_ids)) if m is not None else None


def _move(s, mesh, src):
    """`s` (on mesh `src`) moved onto `mesh`, Replicate there."""
    if _global_trace is not None:
        return _global_trace.move(s, mesh, src)
    return _to_replicate(s, mesh)


def _global_norm_ops(grads):
    """The sum of squares of `grads` as a tensor (float32 for 16-bit gradients). For dist
    gradients each local sum is Partial over the mesh axes its gradient is split on and
    Replicate elsewhere: the sums of one layout are added locally, then each layout's total
    is all-reduced once over its split axes (none for replicated gradients). Gradients on
    several meshes (pipeline stages): each mesh's total is Replicate on it; they are summed
    along a chain of cross-mesh moves (mesh 0's total to mesh 1, added there, ... ), so the
    sum lies on the last mesh, computed once (Note [Pipeline clipping]). Returns (the sum, the
    mesh it lies on: None for plain gradients)."""
    totals, meshes = {}, {}
    for g in grads:
        g32 = _as_float(g)
        s = (g32 * g32).sum()
        key = (str(s.dtype), _mesh_key(g), _sum_layout(s, g))
        meshes.setdefault(key[1], _mesh_of(g))
        totals[key] = s if key not in totals else totals[key] + s
    f64 = any(s.dtype == _C.DataType.float64 for s in totals.values())
    per_mesh = {}  # mesh -> its total, Replicate on it (float64 when any gradient is float64)
    for (_, mesh, layout), s in totals.items():
        if layout is not None:  # one all-reduce per layout
            s = _global_trace.replicate(s, meshes[mesh]) if _global_trace is not None else _to_replicate(s)
        if f64 and s.dtype != _C.DataType.float64:
            s = _ops.cast(s, _C.DataType.float64)
        per_mesh[mesh] = s if mesh not in per_mesh else per_mesh[mesh] + s
    total = last = None
    for key, s in per_mesh.items():
        total = s if total is None else _move(total, meshes[key], meshes[last]) + s
        last = key
    return total, meshes[last]


def _clip_scale(sum_of_squares, clip_norm):
    """(clip_norm / max(norm, clip_norm), norm) as tensor ops, norm the square root of
    `sum_of_squares`: the factor that scales a norm above clip_norm down to it."""
    norm = sum_of_squares.sqrt()
    clip = _ops.full_like(norm, clip_norm, norm.dtype, norm.place)
    return clip / _ops.maximum(norm, clip), norm


def _on_mesh_of(scale, mesh, g, cache):
    """The scale (computed on `mesh`) where gradient `g` lives: moved (once per mesh) onto
    `g`'s mesh, when they differ."""
    key = _mesh_key(g)
    if key is None or mesh is None or key == (tuple(mesh.shape), tuple(mesh.process_ids)):
        return scale
    if key not in cache:
        cache[key] = _move(scale, _mesh_of(g), mesh)
    return cache[key]


class ClipGradBase:
    def __call__(self, params_grads):
        with no_grad():
            return self._clip(list(params_grads))

    def _clip(self, params_grads):
        raise NotImplementedError


class ClipGradByValue(ClipGradBase):
    """Clamps every gradient element into [min, max] (min defaults to -max)."""

    def __init__(self, max, min=None):  # noqa: A002 (Paddle's names)
        max = float(max)
        min = -max if min is None else float(min)
        if min > max:
            raise ValueError(f"ClipGradByValue: min ({min}) must not exceed max ({max})")
        self.max, self.min = max, min

    def _clip(self, params_grads):
        return [
            (p, _ops.clip(g, self.min, self.max) if _need_clip(p) else g) for p, g in params_grads
        ]

    def __str__(self):
        return f"Clip Gradient By Value, min = {self.min:f}, max={self.max:f}"


class ClipGradByNorm(ClipGradBase):
    """Rescales each gradient whose L2 norm exceeds clip_norm to norm clip_norm."""

    def __init__(self, clip_norm):
        clip_norm = float(clip_norm)
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByNorm: clip_norm must be positive, got {clip_norm}")
        self.clip_norm = clip_norm

    def _clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if _need_clip(p) and _as_ops([g]):
                # traced (a converted training step, a DistModel program) or dist: no Python
                # float; g * clip_norm / max(norm, clip_norm), the same values
                scale, _ = _clip_scale(_global_norm_ops([g])[0], self.clip_norm)
                g = g * (scale if scale.dtype == g.dtype else _ops.cast(scale, g.dtype))
            elif _need_clip(p):
                norm = math.sqrt(_sq_sum(g))
                if norm > self.clip_norm:
                    g = g * (self.clip_norm / norm)
            out.append((p, g))
        return out

    def __str__(self):
        return f"Gradient Clip By Norm, clip_norm={self.clip_norm:f}"


class ClipGradByGlobalNorm(ClipGradBase):
    """Scales all gradients by clip_norm / max(global_norm, clip_norm), where global_norm is
    the L2 norm of all clipped gradients together."""

    def __init__(self, clip_norm, group_name="default_group", auto_skip_clip=False):
        clip_norm = float(clip_norm)
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be positive, got {clip_norm}")
        self.clip_norm, self.group_name, self.auto_skip_clip = clip_norm, group_name, auto_skip_clip

    def global_norm(self, params_grads):
        return math.sqrt(sum(_sq_sum(g) for p, g in params_grads if _need_clip(p)))

    def _clip(self, params_grads):
        grads = [g for p, g in params_grads if _need_clip(p)]
        if grads and _as_ops(grads):
            return self._clip_ops(params_grads, grads)
        norm = self.global_norm(params_grads)
        if norm <= self.clip_norm or not math.isfinite(norm) and self.auto_skip_clip:
            return params_grads
        scale = self.clip_norm / norm
        return [(p, g * scale if _need_clip(p) else g) for p, g in params_grads]

    def _clip_ops(self, params_grads, grads):
        """The norm, its reduction over the mesh and the scaling as tensor ops (no Python
        float): what a DistModel program records. scale = clip_norm / max(norm, clip_norm)."""
        total, mesh = _global_norm_ops(grads)
        scale, norm = _clip_scale(total, self.clip_norm)
        if self.auto_skip_clip:  # a non-finite norm leaves the gradients as they are
            scale = _ops.where(_ops.isfinite(norm), scale, _ops.full_like(norm, 1.0, norm.dtype, norm.place))
        out, moved = [], {}
        for p, g in params_grads:
            if _need_clip(p):
                sc = _on_mesh_of(scale, mesh, g, moved)
                g = g * (sc if sc.dtype == g.dtype else _ops.cast(sc, g.dtype))
            out.append((p, g))
        return out

    def __str__(self):
        return f"Gradient Clip By GlobalNorm, global_norm={self.clip_norm:f}"


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the .grad of `parameters` in place so their total norm is at most max_norm;
    returns the total norm as a Tensor (Paddle's nn.utils.clip_grad_norm_)."""
    from .._creation import to_tensor

    params = [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    norm_type = float(norm_type)
    with no_grad():
        if not grads:
            return to_tensor(0.0)
        if _tracing() and not error_if_nonfinite:
            return _clip_grad_norm_ops(grads, float(max_norm), norm_type)
        if norm_type == float("inf"):
            total = max(float(g.abs().max()) for g in grads)
        else:  # one pass each (p_norm) rather than |g| ** p and its sum
            total = sum(float(_ops.p_norm(_as_float(g), norm_type, [], False)) ** norm_type
                        for g in grads) ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total):
            raise RuntimeError(f"clip_grad_norm_: the total gradient norm is {total}")
        coef = float(max_norm) / (total + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.copy_(g * coef)
    return to_tensor(total, place=grads[0].place)  # beside the gradients, as Paddle's


def _clip_grad_norm_ops(grads, max_norm, norm_type):
    """clip_grad_norm_ as tensor ops while traced (inside a converted training step): the total norm stays a tensor and every gradient is scaled by
    min(max_norm / (total + 1e-6), 1), the eager path's values without a Python branch."""
    parts = []
    for g in grads:
        a = (g if g.dtype in (_C.DataType.float32, _C.DataType.float64) else _ops.cast(g, _C.DataType.float32)).abs()
        parts.append(a.max() if norm_type == float("inf") else (a ** norm_type).sum())
    if any(s.dtype == _C.DataType.float64 for s in parts):
        parts = [s if s.dtype == _C.DataType.float64 else _ops.cast(s, _C.DataType.float64) for s in parts]
    total = parts[0]
    for s in parts[1:]:
        total = _ops.maximum(total, s) if norm_type == float("inf") else total + s
    if norm_type != float("inf"):
        total = total ** (1.0 / norm_type)
    coef = _ops.minimum(max_norm / (total + 1e-6), _ops.full_like(total, 1.0, total.dtype, total.place))
    for g in grads:
        g.copy_(g * (coef if coef.dtype == g.dtype else _ops.cast(coef, g.dtype)))
    return total


def clip_by_norm(x, max_norm, name=None):
    """x scaled down to L2 norm max_norm when its norm exceeds it: x * max_norm /
    max(||x||, max_norm)."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"clip_by_norm: x must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"clip_by_norm: x must be a float tensor, got {x.dtype.name}")
    max_norm = float(max_norm)
    if not max_norm > 0:
        raise ValueError(f"clip_by_norm: max_norm must be > 0, got {max_norm}")
    norm = x.square().sum().sqrt()
    return x * (max_norm / _C.ops.maximum(norm, _C.ops.full_like(norm, max_norm, norm.dtype, norm.place)))
