"""paddle.static.amp.bf16: the bfloat16 op lists and guard."""
import contextlib


class AutoMixedPrecisionListsBF16:
    """bf16_list (ops run in bfloat16), fp32_list (float32), gray_list: the defaults with
    custom_bf16_list / custom_fp32_list moved over; custom_fp32_varnames stay float32."""

    def __init__(self, custom_bf16_list=None, custom_fp32_list=None, custom_fp32_varnames=None):
        from . import AutoMixedPrecisionLists, _op_set

        who = "AutoMixedPrecisionListsBF16"
        lists = AutoMixedPrecisionLists.__new__(AutoMixedPrecisionLists)
        lists._who = who
        lists._init(_op_set(custom_bf16_list, who, "custom_bf16_list"),
                    _op_set(custom_fp32_list, who, "custom_fp32_list"), custom_fp32_varnames, "bfloat16")
        self.bf16_list, self.fp32_list, self.gray_list = lists.white_list, lists.black_list, lists.gray_list
        self.fp32_varnames = lists.black_varnames
        self.unsupported_list = set()


@contextlib.contextmanager
def bf16_guard():
    """Marks the ops built inside as the ones a use_bf16_guard decoration may cast."""
    from . import _guarded

    _guarded.append("bfloat16")
    try:
        yield
    finally:
        _guarded.pop()
