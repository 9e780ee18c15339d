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
    unfused ops for the IR's own fusions), nothing distributed."""
    tensors = [t for t in tensors if t is not None]
    for t in tensors:
        if not isinstance(t, _C.Tensor) or t.dtype not in dtypes:
            return False
    if _C.is_grad_enabled() and not all(t.stop_gradient for t in tensors):
        return False
    if _trace_state.tracer() is not None or _C._amp_get_state()[0] != 0:
        return False
    return all(t.place.is_cpu_place() and not t.is_dist() for t in tensors)
