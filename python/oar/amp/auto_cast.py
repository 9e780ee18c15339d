"""oar.amp.auto_cast and oar.amp.decorate (Paddle 3.x semantics).

The cast decision runs in C++, in the autocast layer at the top of every generated op
(paddle_core/dispatch/amp.h, Note [AMP] in docs/notes/amp.md); each op's default
category (white/black/gray) is declared in its definition (`amp:` in
paddle_core/ops/*.yaml). This module only sets the per-thread state: the level, the
low-precision dtype and the custom op lists.
"""
import contextlib

from .. import _C
from .._dtype import convert_dtype

__all__ = ["auto_cast", "amp_guard", "decorate", "amp_decorate", "is_float16_supported",
           "is_bfloat16_supported", "is_auto_cast_enabled", "white_list", "black_list"]

_LEVELS = {"O0": 0, "OD": 1, "O1": 1, "O2": 2}


def _default_lists(category):
    # The op definitions declare each op's category (`amp:` in paddle_core/ops/*.yaml).
    ops = set(_C._amp_default_ops(category))
    return {d: {"OD": set(ops), "O1": set(ops), "O2": set(ops)} for d in ("float16", "bfloat16")}


def white_list():
    """The default white list: {dtype: {level: ops}} as Paddle's paddle.amp.white_list()."""
    return _default_lists("white")


def black_list():
    """The default black list: {dtype: {level: ops}} as Paddle's paddle.amp.black_list()."""
    return _default_lists("black")


def _check_level_dtype(level, dtype, op):
    if level not in _LEVELS:
        raise ValueError(f"{op}: level must be 'O0', 'OD', 'O1' or 'O2', got {level!r}")
    if dtype not in ("float16", "bfloat16"):
        raise ValueError(f"{op}: dtype must be 'float16' or 'bfloat16', got {dtype!r}")


def _custom_lists(custom_white_list, custom_black_list):
    """The custom lists, checked; the C++ layer applies them over each op's default
    category (black wins, then white). Any name is accepted, as in Paddle: one that is
    not an Oar op (a Paddle op name) never matches."""
    cw, cb = set(custom_white_list or ()), set(custom_black_list or ())
    both = cw & cb
    if both:
        raise ValueError(f"auto_cast: ops {sorted(both)} are in both custom_white_list and "
                         "custom_black_list")
    return sorted(cw), sorted(cb)


def is_auto_cast_enabled():
    return _C._amp_get_state()[0] != 0


@contextlib.contextmanager
def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1",
              dtype="float16", use_promote=True):
    """Mixed precision in the block: under O1, ops of the white list (matmul, conv...)
    run in `dtype`, ops of the black list (exp, log, softmax, losses, reductions, norms)
    in float32, and any other op in float32 when its inputs mix float32 and `dtype`;
    under O2 every op except the black list runs in `dtype`. Casts are differentiable,
    so gradients reach float32 parameters in their dtype."""
    _check_level_dtype(level, dtype, "auto_cast")
    prev = _C._amp_get_state()
    if enable and level != "O0":
        white, black = _custom_lists(custom_white_list, custom_black_list)
        lvl = 2 if level == "O2" else 1  # OD runs as O1
        _C._amp_set_state(lvl, convert_dtype(dtype), white, black)
    else:
        _C._amp_set_state(0, convert_dtype(prev[1]), prev[2], prev[3])
    try:
        yield
    finally:
        _C._amp_set_state(prev[0], convert_dtype(prev[1]), prev[2], prev[3])


amp_guard = auto_cast


def _cpu_has_native_fp16():
    """Whether the CPU does float16 arithmetic itself (AVX512-FP16 or AMX-FP16)."""
    global _NATIVE_FP16
    if _NATIVE_FP16 is None:
        flags = set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags = set(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
        _NATIVE_FP16 = bool(flags & {"avx512_fp16", "amx_fp16"})
    return _NATIVE_FP16


_NATIVE_FP16 = None


def is_float16_supported(device=None):
    """Whether float16 mixed precision pays on `device` ('cpu', 'gpu:0', a plugin device;
    None: the current device), as Paddle answers it: on a CPU, True only when the CPU does
    float16 arithmetic natively (AVX512-FP16/AMX-FP16); elsewhere True when the device has
    float16 kernels. Oar's float16 CPU kernels exist either way (they compute in float32),
    so auto_cast(dtype='float16') still runs on any CPU; it only saves memory there."""
    from .._device import _place_or_current
    place = _place_or_current(device, "is_float16_supported")
    if place.is_cpu_place():
        return _cpu_has_native_fp16()
    return "float16" in _C._kernel_dtypes("matmul")


def is_bfloat16_supported(device=None):
    """True: every float op has a bfloat16 CPU kernel."""
    return "bfloat16" in _C._kernel_dtypes("matmul")


# ---------------------------------------------------------------- decorate
_NORM_NAMES = ("BatchNorm", "LayerNorm", "GroupNorm", "InstanceNorm", "RMSNorm", "SyncBatchNorm")


class _MasterWeights:
    """O2 master weights of one optimizer: the optimizer updates float32 masters (the
    layer's original parameters); the layer computes with low-precision copies.
    Gradients move low -> master before the update, values master -> low after it."""

    def __init__(self, pairs, dtype):
        self.pairs = pairs  # [(low-precision Parameter, float32 master)]
        self.dtype = dtype
        self.grads_synced = False

    def sync_grads(self):
        if self.grads_synced:
            return
        ctx = _converting_step()
        for low, master in self.pairs:
            if ctx is not None:  # the masters' .grad is put back after the trace
                ctx.restore_grads.append((master, master.grad))
            g = low.grad
            master.grad = None if g is None else _C.ops.cast(g, _C.DataType.float32)
        self.grads_synced = True

    def sync_params(self):
        ctx = _converting_step()
        for low, master in self.pairs:
            if ctx is not None:  # a converted step writes the parameter in the program only
                ctx.tracer.record_write(low, _C.ops.cast(master, self.dtype))
            else:
                low._copy_from(_C.ops.cast(master, self.dtype))
        self.grads_synced = False

    def clear_low_grads(self, set_to_zero):
        for low, _ in self.pairs:
            low.clear_gradient(set_to_zero)


def _converting_step():
    """The training-step context while to_static converts a step (Note [Training steps] in
    docs/notes/jit.md), else None."""
    from .. import _trace_state
    if not _trace_state.active:
        return None
    from ..jit import _train_step  # a late import: jit is above amp

    return _train_step.step_trace() if _train_step.converting_step() else None


def _install_master(optimizer, master):
    if hasattr(optimizer, "_amp_master"):
        raise RuntimeError("decorate: this optimizer is already decorated for O2")
    optimizer._amp_master = master
    step, clear = optimizer.step, optimizer.clear_grad

    def amp_step():
        master.sync_grads()
        step()
        master.sync_params()

    def amp_clear_grad(set_to_zero=True):
        clear(set_to_zero)
        master.clear_low_grads(set_to_zero)

    optimizer.step = amp_step
    optimizer.clear_grad = optimizer.clear_gradients = amp_clear_grad


def _cast_layer_params(model, dtype, excluded):
    """Replaces the floating parameters of every sublayer not excluded by low-precision
    copies; returns {id(original): copy}."""
    from ..nn.layer import Parameter
    replaced = {}
    for layer in model.sublayers(include_self=True):
        name = type(layer).__name__
        if any(n in name for n in _NORM_NAMES) or any(
                layer is e or (isinstance(e, type) and isinstance(layer, e)) for e in excluded):
            continue
        for pname, p in list(layer._parameters.items()):
            if p is None or p.dtype.name != "float32":
                continue
            if id(p) not in replaced:
                low = Parameter(_C.ops.cast(p, dtype), trainable=not p.stop_gradient, name=p.name)
                for attr in ("optimize_attr", "regularizer", "need_clip"):
                    if hasattr(p, attr):
                        setattr(low, attr, getattr(p, attr))
                replaced[id(p)] = (p, low)
            layer._parameters[pname] = replaced[id(p)][1]
    return replaced


def decorate(models, optimizers=None, level="O1", dtype="float16", master_weight=None,
             save_dtype=None, master_grad=False, excluded_layers=None):
    """O2: casts the models' parameters to `dtype` (normalization layers and
    `excluded_layers` keep float32) and, with master_weight (the O2 default), keeps the
    float32 parameters as the optimizers' master weights. O1: returns the arguments
    unchanged. Returns models (and optimizers when given) in the shape they came in."""
    from ..nn.layer import Layer
    _check_level_dtype(level, dtype, "decorate")
    single_model = isinstance(models, Layer)
    model_list = [models] if single_model else list(models)
    for m in model_list:
        if not isinstance(m, Layer):
            raise TypeError(f"decorate: models must be a Layer or a list of Layers, got "
                            f"{type(m).__name__}")
    single_opt = optimizers is not None and not isinstance(optimizers, (list, tuple))
    opt_list = [] if optimizers is None else ([optimizers] if single_opt else list(optimizers))
    if level == "O2":
        low = convert_dtype(dtype)
        excluded = list(excluded_layers or [])
        if isinstance(excluded_layers, (Layer, type)):
            excluded = [excluded_layers]
        replaced = {}
        for m in model_list:
            replaced.update(_cast_layer_params(m, low, excluded))
        use_master = True if master_weight is None else bool(master_weight)
        for opt in opt_list:
            pairs = []
            for group in opt._param_groups:
                params = []
                for p in group["params"]:
                    if id(p) in replaced:
                        orig, low_p = replaced[id(p)]
                        if use_master:
                            pairs.append((low_p, orig))
                            params.append(orig)
                        else:
                            params.append(low_p)
                    else:
                        params.append(p)
                group["params"] = params
            if use_master and pairs:
                _install_master(opt, _MasterWeights(pairs, low))
        for m in model_list:
            m._amp_save_dtype = save_dtype
    out_models = model_list[0] if single_model else model_list
    if optimizers is None:
        return out_models
    return out_models, (opt_list[0] if single_opt else opt_list)


amp_decorate = decorate
