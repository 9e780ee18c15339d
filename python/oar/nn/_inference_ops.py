"""When an eager call may run the predictor's fused inference ops instead of the ops a
training step needs (Note [Eager inference ops] in docs/notes/cpu_speed_steps.md):
F.conv2d as fused_conv2d, F.linear as fused_linear, a Transformer layer's feed-forward
input as fused_linear_activation."""
from .. import _C, _trace_state

_F32 = (_C.DataType.float32,)
F32_F64 = (_C.DataType.float32, _C.DataType.float64)


def no_grad_flows(tensors, dtypes=_F32):
    """Whether `tensors` (None entries skipped) may take a fused inference op: no gradient
    to feed (grad disabled, or none of them wants one), every dtype in `dtypes`, on the
    CPU, no autocast (whose lists name the unfused ops), nothing traced (programs keep the
    unfused ops for the IR's own fusions), nothing distributed. A training call leaves at
    the first check (~0.3 us)."""
    if _C.is_grad_enabled():
        for t in tensors:
            if t is not None and not getattr(t, "stop_gradient", True):
                return False
    if _trace_state.active or _C._amp_get_state()[0] != 0:
        return False
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, _C.Tensor):
            return False
        if t.dtype not in dtypes or t.is_dist() or not t.place.is_cpu_place():
            return False
    return True
