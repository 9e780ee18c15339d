"""Gradient clipping (Paddle's ClipGradByValue, ClipGradByNorm, ClipGradByGlobalNorm).
An optimizer calls clip(params_grads) with a list of (param, grad) before its update;
parameters created with ParamAttr(need_clip=False) pass through unchanged."""

import math

from .. import _C
from ..autograd import no_grad

_ops = _C.ops


def _sq_sum(g):
    g32 = (
        g
        if g.dtype in (_C.DataType.float32, _C.DataType.float64)
        else _ops.cast(g, _C.DataType.float32)
    )
    return float((g32 * g32).sum())


def _need_clip(p):
    return getattr(p, "need_clip", True)


def _as_ops(grads):
    """Whether the global norm is computed as tensor ops: while a program is traced (a
    DistModel step), or for dist gradients on one mesh (the eager dist step, so that it
    matches the compiled one). Plain eager gradients keep the Python-float path, and so do
    gradients on several meshes (a DistModel pipeline step with it runs eagerly)."""
    from .. import _trace_state  # jit's active tracers, read without importing jit (above nn)
    meshes = {tuple(g.process_mesh.process_ids) for g in grads if g.is_dist()}
    if len(meshes) > 1:  # pipeline stages: the norm spans meshes (the float path; traced, eager fallback)
        return False
    return bool(_trace_state.active) or (len(meshes) == 1 and all(g.is_dist() for g in grads))


def _global_norm_ops(grads):
    """The sum of squares of `grads` as a tensor (float32 for 16-bit gradients). For dist
    gradients each local sum is Partial over the mesh axes its gradient is split on and
    Replicate elsewhere: the sums of one layout are added locally, then each layout's total
    is all-reduced once over its split axes (none for replicated gradients)."""
    totals = {}
    for g in grads:
        g32 = g if g.dtype in (_C.DataType.float32, _C.DataType.float64) else _ops.cast(g, _C.DataType.float32)
        s = (g32 * g32).sum()
        key = (str(s.dtype), tuple(map(str, s.placements)) if s.is_dist() else None)
        totals[key] = s if key not in totals else totals[key] + s
    parts = []
    for (_, layout), s in totals.items():
        if layout is not None and not all(q.is_replicated() for q in s.placements):
            # To Replicate on its mesh: an all_reduce (in a traced program, a dist op), through
            # the binding dist.reshard calls, so that nn (below distributed and jit) imports
            # neither. (0, -1, 0) is Replicate() as dist's _encode_all writes it.
            m = s.process_mesh
            s = _C.distributed.reshard(s, m.shape, m.process_ids, m.dim_names, [(0, -1, 0)] * len(s.placements))
        parts.append(s)
    f64 = [s for s in parts if s.dtype == _C.DataType.float64]
    total = None
    for s in parts:  # float64 when any gradient is float64
        s = s if not f64 or s.dtype == _C.DataType.float64 else _ops.cast(s, _C.DataType.float64)
        total = s if total is None else total + s
    return total


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
            if _need_clip(p):
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
        norm = _global_norm_ops(grads).sqrt()
        clip = _ops.full_like(norm, self.clip_norm, norm.dtype, norm.place)
        scale = clip / _ops.maximum(norm, clip)
        if self.auto_skip_clip:  # a non-finite norm leaves the gradients as they are
            scale = _ops.where(_ops.isfinite(norm), scale, _ops.full_like(norm, 1.0, norm.dtype, norm.place))
        out = []
        for p, g in params_grads:
            if _need_clip(p):
                g = g * (scale if scale.dtype == g.dtype else _ops.cast(scale, g.dtype))
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
        if norm_type == float("inf"):
            total = max(float(g.abs().max()) for g in grads)
        else:
            total = sum(float((g.abs() ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total):
            raise RuntimeError(f"clip_grad_norm_: the total gradient norm is {total}")
        coef = float(max_norm) / (total + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.copy_(g * coef)
    return to_tensor(total)


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
