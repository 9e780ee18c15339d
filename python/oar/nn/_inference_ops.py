"""When an eager call may run the predictor's fused inference ops instead of the ops a
training step needs (Note [Eager inference ops] in docs/notes/cpu_speed_steps.md):
F.conv2d as fused_conv2d, F.linear as fused_linear, a Transformer layer's feed-forward
input as fused_linear_activation."""
from .. import _C, _trace_state

_F32 = (_C.DataType.float32,)
F32_F64 = (_C.DataType.float32, _C.DataType.float64)


def no_grad_flows(tensors, dtypes=_F32):
    """Whether `tensors` (a tuple; None entries skipped) may take a fused inference op: no
    gradient to feed (grad disabled, or none of them wants one), every dtype in `dtypes`
    (_F32 or F32_F64), on the CPU, no autocast (whose lists name the unfused ops), nothing
    traced (programs keep the unfused ops for the IR's own fusions), nothing distributed.
    The tensor checks run in one C++ call (~0.3 us; 2.9 us for three tensors from Python)."""
    if _trace_state.active:
        return False
    return _C._no_grad_flows(tensors, dtypes is F32_F64)
