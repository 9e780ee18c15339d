"""The rest of Paddle's random API: the in-place samplers Tensor.cauchy_ / geometric_, the
CUDA generators' states (get/set_cuda_rng_state) and disable_signal_handler."""
import math

from . import _C, _trace_state
from ._C import DataType, Tensor
from ._creation import _uniform

__all__ = ["cauchy_", "geometric_", "get_cuda_rng_state", "set_cuda_rng_state",
           "disable_signal_handler"]
_TENSOR_METHODS = ["cauchy_", "geometric_"]


def _float_target(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must have a floating-point dtype, got {x.dtype.name}")


def _number(v, op, arg):
    if isinstance(v, Tensor):
        if v.size != 1:
            raise ValueError(f"{op}: {arg} must be a number or a 1-element Tensor, got shape "
                             f"{list(v.shape)}")
        v = v.item()
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {arg} must be a real number, got {type(v).__name__}") from None
    if not math.isfinite(v):
        raise ValueError(f"{op}: {arg} must be finite, got {v}")
    return v


def cauchy_(x, loc=0, scale=1, name=None):
    """Fills x in place with Cauchy(loc, scale) samples, loc + scale * tan(pi * (u - 1/2)) for
    u ~ U(0, 1) (Paddle's Tensor.cauchy_); returns x."""
    import oar
    _float_target(x, "cauchy_")
    loc, scale = _number(loc, "cauchy_", "loc"), _number(scale, "cauchy_", "scale")
    if scale <= 0:
        raise ValueError(f"cauchy_: scale must be > 0, got {scale}")
    u = _uniform(_trace_state.sizes_of(x), DataType.float64, 0.0, 1.0, 0, x.place)
    return x.copy_((loc + scale * oar.tan(math.pi * (u - 0.5))).astype(x.dtype))


def geometric_(x, probs, name=None):
    """Fills x in place with log(u) / log1p(-probs), u ~ U(tiny, 1): the number of failures
    before the first success of Bernoulli(probs) trials, not rounded to an integer, as Paddle's
    Tensor.geometric_ documents; returns x."""
    import numpy as np
    import oar
    _float_target(x, "geometric_")
    if isinstance(probs, Tensor):
        p = probs.detach().astype(x.dtype)
        bad = p.size and (float(p.min()) <= 0 or float(p.max()) >= 1)
        if bad:
            raise ValueError(f"geometric_: probs must be in (0, 1), got values in "
                             f"[{float(p.min())}, {float(p.max())}]")
    else:
        v = _number(probs, "geometric_", "probs")
        if not 0 < v < 1:
            raise ValueError(f"geometric_: probs must be in (0, 1), got {v}")
        p = _C.ops.full([], v, x.dtype, x.place)
    tiny = float(np.finfo(np.dtype(x.dtype.name if x.dtype.name != "bfloat16" else "float32")).tiny)
    u = _uniform(_trace_state.sizes_of(x), x.dtype, tiny, 1.0, 0, x.place)
    return x.copy_((oar.log(u) / oar.log1p(-p)).astype(x.dtype))


def get_cuda_rng_state():
    """The states of the CUDA devices' generators, one per device: an empty list where Oar
    runs without CUDA devices (as Paddle on a CPU build)."""
    import oar
    if not oar.is_compiled_with_cuda():
        return []
    return [oar.get_rng_state() for _ in range(oar._C._device_count("gpu"))]


def set_cuda_rng_state(state_list):
    """Restores what get_cuda_rng_state returned (one state per CUDA device)."""
    import oar
    if not isinstance(state_list, (list, tuple)):
        raise TypeError(f"set_cuda_rng_state: state_list must be a list of generator states, "
                        f"got {type(state_list).__name__}")
    expected = len(get_cuda_rng_state())
    if len(state_list) != expected:
        raise ValueError(f"set_cuda_rng_state: got {len(state_list)} states for {expected} CUDA "
                         f"device(s)")
    for state in state_list:
        oar.set_rng_state(state)


def disable_signal_handler():
    """Paddle installs its own handlers for SIGSEGV and friends and this removes them; Oar
    installs none, so Python's (and other libraries') handlers already stay in place."""
    return None
