"""oar.amp.debugging (Paddle's paddle.amp.debugging): a NaN/Inf checker of every op's
outputs, per-op dtype statistics, and check_numerics.

Both the checker and the statistics watch eager ops through one per-thread observer in
the amp dispatch layer (paddle_core/dispatch/op_observer.h): while neither is on, no
observer is installed and an op pays nothing for them (the thread-local layer bit every
op already tests). Ops run inside programs (to_static, the predictor) do not walk the
dispatch layers and are not seen. The observer sees each op under Oar's op name
(`add`, `pow`, `matmul`), and the ops a backward runs under theirs.

Reports go to stderr, or with TensorCheckerConfig(output_dir=...) are appended to
`<output_dir>/worker_cpu.log`.
"""
import contextlib
import enum
import functools
import os
import random
import sys

from .. import _C

__all__ = ["DebugMode", "TensorCheckerConfig", "check_numerics", "enable_operator_stats_collection",
           "disable_operator_stats_collection", "collect_operator_stats", "enable_tensor_checker",
           "disable_tensor_checker", "check_layer_numerics"]


class DebugMode(enum.Enum):
    """What the tensor checker does with each checked output.

    - CHECK_NAN_INF_AND_ABORT: reports a tensor with NaN/Inf and raises RuntimeError.
    - CHECK_NAN_INF: reports a tensor with NaN/Inf and goes on.
    - CHECK_ALL_FOR_OVERFLOW: also reports float32 outputs with values float16 cannot
      hold (|x| > 65504 overflows; 0 < |x| < 2**-24 underflows to zero).
    - CHECK_ALL: reports every checked output's statistics.
    """

    CHECK_NAN_INF_AND_ABORT = 0
    CHECK_NAN_INF = 1
    CHECK_ALL_FOR_OVERFLOW = 2
    CHECK_ALL = 3


_FP16_MAX = 65504.0
_FP16_TINY = 2.0 ** -24  # the smallest float16 subnormal
_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _dtype_name(t):
    return str(t.dtype).replace("paddle.", "").replace("oar.", "")


def _stats(t):
    """(numel, num_nan, num_inf, num_zero, max, min, mean) of a tensor, in float64; max and
    min skip NaN, mean does not (a NaN anywhere makes it NaN)."""
    import numpy as np
    name = _dtype_name(t)
    if name in ("float16", "bfloat16"):
        t = t.astype("float32")
    a = np.asarray(t.numpy())
    if np.iscomplexobj(a):
        a = np.abs(a)
    a = a.astype(np.float64, copy=False).ravel()
    n = a.size
    if n == 0:
        return 0, 0, 0, 0, 0.0, 0.0, 0.0
    nan = np.isnan(a)
    num_nan = int(nan.sum())
    num_inf = int(np.isinf(a).sum())
    num_zero = int((a == 0).sum())
    if num_nan == n:
        mx = mn = float("nan")
    else:
        mx, mn = float(np.nanmax(a)), float(np.nanmin(a))
    with np.errstate(all="ignore"):
        mean = float(a.mean())
    return n, num_nan, num_inf, num_zero, mx, mn, mean


def _where(op, tensor_name, t):
    return (f"[device={t.place.device_str() if hasattr(t.place, 'device_str') else t.place}, op={op}, "
            f"tensor={tensor_name}, dtype={_SHORT.get(_dtype_name(t), _dtype_name(t))}]")


def _line(level, op, tensor_name, t, s, extra=""):
    n, nan, inf, zero, mx, mn, mean = s
    return (f"[PRECISION] [{level}] in {_where(op, tensor_name, t)}, numel={n}, num_nan={nan}, "
            f"num_inf={inf}, num_zero={zero}{extra}, max={mx:e}, min={mn:e}, mean={mean:e}")


def _emit(line, output_dir):
    if output_dir is None:
        print(line, file=sys.stderr)
        return
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "worker_cpu.log"), "a") as f:
        f.write(line + "\n")


def _check_mode(debug_mode, where):
    if not isinstance(debug_mode, DebugMode):
        raise TypeError(f"{where}: debug_mode must be a paddle.amp.debugging.DebugMode, got "
                        f"{debug_mode!r}")
    return debug_mode


def _check_tensor(op, tensor_name, t, mode, output_dir):
    """Reports (and under CHECK_NAN_INF_AND_ABORT raises for) one tensor; returns its stats."""
    s = _stats(t)
    n, nan, inf, zero, mx, mn, _ = s
    if nan or inf:
        _emit(_line("ERROR", op, tensor_name, t, s), output_dir)
        if mode is DebugMode.CHECK_NAN_INF_AND_ABORT:
            raise RuntimeError(f"(PreconditionNotMet) There are NAN or INF (num_nan={nan}, num_inf={inf}, "
                               f"num_zero={zero}) in {_where(op, tensor_name, t)}.")
    elif mode is DebugMode.CHECK_ALL_FOR_OVERFLOW and _dtype_name(t) == "float32" and n:
        import numpy as np
        a = np.abs(np.asarray(t.numpy(), dtype=np.float64).ravel())
        over = int((a > _FP16_MAX).sum())
        under = int(((a > 0) & (a < _FP16_TINY)).sum())
        if over or under:
            _emit(_line("WARNING", op, tensor_name, t, s,
                        f", num_fp16_overflow={over}, num_fp16_underflow={under}"), output_dir)
    elif mode is DebugMode.CHECK_ALL:
        _emit(_line("INFO", op, tensor_name, t, s), output_dir)
    return s


class TensorCheckerConfig:
    """The configuration of the tensor checker (enable_tensor_checker).

    Args:
        enable (bool): whether enable_tensor_checker turns the checker on.
        debug_mode (DebugMode): what to do with each output (default: report NaN/Inf and raise).
        output_dir (str|None): a folder to append the reports to (worker_cpu.log); None: stderr.
        checked_op_list (list|tuple|None): check only these ops (Oar's op names).
        skipped_op_list (list|tuple|None): never check these ops.
        debug_step (list|tuple|None): [start, end): check only while the count of
            enable_tensor_checker calls with this range is in it (one call per training step).
        stack_height_limit (int): accepted for Paddle (a raised error carries the Python
            traceback of the op that produced the NaN/Inf).

    With enable=True the random generators (oar's, NumPy's and Python's) are seeded with
    the default generator's initial seed, as Paddle does, so a checked run repeats.
    """

    current_step_id = 0  # shared by every config: enable_tensor_checker calls counted

    def __init__(self, enable, debug_mode=DebugMode.CHECK_NAN_INF_AND_ABORT, output_dir=None,
                 checked_op_list=None, skipped_op_list=None, debug_step=None, stack_height_limit=1):
        self.enable = bool(enable)
        self.debug_mode = _check_mode(debug_mode, "TensorCheckerConfig")
        if output_dir is not None and not isinstance(output_dir, (str, os.PathLike)):
            raise TypeError(f"TensorCheckerConfig: output_dir must be a str or None, got "
                            f"{type(output_dir).__name__}")
        self.output_dir = None if output_dir is None else os.fspath(output_dir)
        self.checked_op_list = self._op_list(checked_op_list, "checked_op_list")
        self.skipped_op_list = self._op_list(skipped_op_list, "skipped_op_list")
        self.debug_step = debug_step
        self.start_step = self.end_step = None
        if debug_step is not None:
            if not isinstance(debug_step, (list, tuple)):
                raise ValueError(f"TensorCheckerConfig: debug_step must be a list or tuple, got "
                                 f"{type(debug_step).__name__}")
            if (len(debug_step) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in debug_step)
                    or debug_step[1] <= debug_step[0]):
                raise ValueError(f"TensorCheckerConfig: debug_step must be [start, end] with integer "
                                 f"start < end, got {list(debug_step)}")
            self.start_step, self.end_step = max(debug_step[0], 0), debug_step[1]
        if isinstance(stack_height_limit, bool) or not isinstance(stack_height_limit, int):
            raise ValueError(f"TensorCheckerConfig: stack_height_limit must be an int, got "
                             f"{stack_height_limit!r}")
        self.stack_height_limit = stack_height_limit
        from .._random import default_generator
        self.initial_seed = default_generator().initial_seed()
        self.seed = 123
        if self.enable:
            self._set_seed()

    @staticmethod
    def _op_list(ops, arg):
        if ops is None:
            return None
        if not isinstance(ops, (list, tuple)) or not all(isinstance(o, str) for o in ops):
            raise ValueError(f"TensorCheckerConfig: {arg} must be a list or tuple of op names, got {ops!r}")
        return list(ops)

    def _set_seed(self):
        import numpy as np
        from .. import seed as _seed
        self.seed = self.initial_seed if 0 <= self.initial_seed <= 2 ** 32 - 1 else 123
        _seed(self.seed)
        np.random.seed(self.seed)
        random.seed(self.seed)
        print("AMP Debugging TensorCheckerConfig: seed ", self.seed)

    def update_and_check_step_id(self):
        """Whether this step is checked (and counts it when a debug_step range is set)."""
        if not self.enable:
            return False
        if self.start_step is not None:
            step = TensorCheckerConfig.current_step_id
            if step < self.start_step or step >= self.end_step:
                return False
            TensorCheckerConfig.current_step_id += 1
        return True

    def _wants(self, op):
        if self.checked_op_list is not None and op not in self.checked_op_list:
            return False
        return not (self.skipped_op_list and op in self.skipped_op_list)

    def start_check_nan_inf(self):
        if self.enable:
            _state["checker"] = self
            _sync_observer()

    def stop_check_nan_inf(self):
        _state["checker"] = None
        _sync_observer()


# ---------------------------------------------------------------- the observer
_state = {"checker": None, "stats": None}  # the active config; {op: [fp16, bf16, fp32, other]}
_STAT_COLUMN = {"float16": 0, "bfloat16": 1, "float32": 2}


def _observe(op, inputs, outputs):
    stats = _state["stats"]
    if stats is not None:
        t = inputs[0] if inputs else (outputs[0] if outputs else None)
        col = _STAT_COLUMN.get(_dtype_name(t), 3) if t is not None else 3
        stats.setdefault(op, [0, 0, 0, 0])[col] += 1
    cfg = _state["checker"]
    if cfg is not None and cfg._wants(op):
        for i, t in enumerate(outputs):
            if _dtype_name(t) in _FLOATS:
                _check_tensor(op, f"out{i}" if len(outputs) > 1 else "", t, cfg.debug_mode, cfg.output_dir)


def _sync_observer():
    on = _state["checker"] is not None or _state["stats"] is not None
    _C._set_op_observer(_observe if on else None)


def enable_tensor_checker(checker_config):
    """Checks every eager op's floating outputs as checker_config says until
    disable_tensor_checker (ops of the backward included while it stays on)."""
    if not isinstance(checker_config, TensorCheckerConfig):
        raise TypeError(f"enable_tensor_checker: checker_config must be a TensorCheckerConfig, got "
                        f"{type(checker_config).__name__}")
    if checker_config.update_and_check_step_id():
        checker_config.start_check_nan_inf()
    else:
        checker_config.stop_check_nan_inf()


def disable_tensor_checker():
    """Turns the tensor checker off."""
    _state["checker"] = None
    _sync_observer()


def check_numerics(tensor, op_type, var_name, debug_mode=DebugMode.CHECK_NAN_INF_AND_ABORT):
    """Counts the NaNs, Infs and zeros of `tensor` and reports as `debug_mode` says (naming
    op_type and var_name). Returns (stats, values): int64 [num_nan, num_inf, num_zero] and
    float32 [max, min, mean] (zeros for an empty tensor)."""
    from .. import to_tensor
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"check_numerics: tensor must be a Tensor, got {type(tensor).__name__}")
    for arg, v in (("op_type", op_type), ("var_name", var_name)):
        if not isinstance(v, str):
            raise TypeError(f"check_numerics: {arg} must be a str, got {type(v).__name__}")
    mode = _check_mode(debug_mode, "check_numerics")
    s = _check_tensor(op_type, var_name, tensor, mode, None)
    return (to_tensor(list(s[1:4]), dtype="int64"), to_tensor(list(s[4:7]), dtype="float32"))


def check_layer_numerics(func):
    """Decorates a Layer's forward: its ops are checked for NaN/Inf (raising on the first)
    while it runs; the checker's previous state comes back afterwards."""
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        if not args:
            raise RuntimeError("check_layer_numerics: the decorated forward got no positional input")
        if not isinstance(args[0], _C.Tensor):
            raise RuntimeError(f"check_layer_numerics: the first input of the layer must be a Tensor, got "
                               f"{type(args[0]).__name__}")
        prev = _state["checker"]
        cfg = TensorCheckerConfig.__new__(TensorCheckerConfig)
        cfg.enable, cfg.debug_mode, cfg.output_dir = True, DebugMode.CHECK_NAN_INF_AND_ABORT, None
        cfg.checked_op_list = cfg.skipped_op_list = None
        _state["checker"] = cfg
        _sync_observer()
        try:
            return func(self, *args, **kwargs)
        finally:
            _state["checker"] = prev
            _sync_observer()
    return wrapper


# ---------------------------------------------------------------- operator stats
def _print_operator_stats(counts):
    print("<{:-^120}>".format(" op list "))
    print("<{:-^40}".format(" Op Name "), "|", "{:-^17}".format(" FP16 Calls "), "|",
          "{:-^17}".format(" BF16 Calls "), "|", "{:-^17}".format(" FP32 Calls"), "|",
          "{:-^17}>".format(" Other Calls "))
    for op in sorted(counts):
        c = counts[op]
        print(f"  {op:<40}|  {c[0]:<17}|  {c[1]:<17}|  {c[2]:<17}|  {c[3]:<17}")
    print("<{:-^120}>\n".format(f" op count: {len(counts)} "))


def enable_operator_stats_collection():
    """Starts counting the eager ops run, per op and per dtype (float16, bfloat16, float32,
    other: the dtype of the op's first input), from zero."""
    _state["stats"] = {}
    _sync_observer()


def disable_operator_stats_collection():
    """Stops counting and prints the table (nothing when collection was off)."""
    counts = _state["stats"]
    if counts is None:
        return
    _state["stats"] = None
    _sync_observer()
    _print_operator_stats(counts)


@contextlib.contextmanager
def collect_operator_stats():
    """Counts the ops run in the block and prints the table on exit."""
    enable_operator_stats_collection()
    try:
        yield
    finally:
        disable_operator_stats_collection()

