"""paddle.static.amp: the op lists and guards of static-graph mixed precision, which model
files import. In Oar, mixed precision in a static program is recorded as in eager code:
build the program inside oar.amp.auto_cast (the casts become ops of the program); the
lists here hold Paddle's per-op choices (white: low precision, black: float32, gray:
follows its inputs) over the defaults the op definitions declare."""
import contextlib

from . import bf16  # noqa: F401


def _op_set(ops, who, arg):
    if ops is None:
        return set()
    if isinstance(ops, str) or not hasattr(ops, "__iter__"):
        raise TypeError(f"{who}: {arg} must be a set or list of op names, got {type(ops).__name__}")
    out = set(ops)
    for o in out:
        if not isinstance(o, str):
            raise TypeError(f"{who}: {arg} must hold op names (str), got {o!r}")
    return out


def _defaults(category):
    from ... import _C

    return set(_C._amp_default_ops(category))


class AutoMixedPrecisionLists:
    """white_list (ops run in float16/bfloat16), black_list (float32), gray_list (follow
    their inputs): the defaults with custom_white_list / custom_black_list moved over."""

    _who = "AutoMixedPrecisionLists"

    def __init__(self, custom_white_list=None, custom_black_list=None, custom_black_varnames=None,
                 dtype="float16"):
        if dtype not in ("float16", "bfloat16"):
            raise ValueError(f"{self._who}: dtype must be 'float16' or 'bfloat16', got {dtype!r}")
        white = _op_set(custom_white_list, self._who, "custom_white_list")
        black = _op_set(custom_black_list, self._who, "custom_black_list")
        self._init(white, black, custom_black_varnames, dtype)

    def _init(self, white, black, black_varnames, dtype):
        both = white & black
        if both:
            raise ValueError(f"{self._who}: ops {sorted(both)} are in both the custom low-precision and float32 "
                             f"lists")
        self.amp_dtype = dtype
        self.white_list = (_defaults("white") - black) | white
        self.black_list = (_defaults("black") - white) | black
        self.gray_list = set()  # every op in neither list follows its inputs' dtype
        self.black_varnames = set(_op_set(black_varnames, self._who, "custom_black_varnames"))
        self.unsupported_list = set()


CustomOpLists = AutoMixedPrecisionLists

_guarded = []  # depth of fp16_guard/bf16_guard regions being built


@contextlib.contextmanager
def fp16_guard():
    """Marks the ops built inside as the ones a use_fp16_guard decoration may cast (a
    region marker: the ops themselves are recorded unchanged)."""
    _guarded.append("float16")
    try:
        yield
    finally:
        _guarded.pop()


def in_guard():
    """The low-precision dtype of the innermost guard being built, or None."""
    return _guarded[-1] if _guarded else None
