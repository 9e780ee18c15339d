"""Regressions for the fault classes the fuzzer (tests/fuzz) found, one test per class, each
case in a child process (test_robustness.run_child) so a crash fails the test instead of
killing pytest."""
import os
import sys

import numpy as np
import pytest

import oar

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_robustness import expect_raise, run_child  # noqa: E402


# ---- an int argument whose __index__ fails or exceeds int64: every op that takes an int
# parsed it through one converter that dereferenced a null result (SIGSEGV).

INDEX_OPS = """
x = oar.ones([2, 3, 4])
bad = [np.arange(3), np.array([1.5]), 2**70, -2**70]
calls = {
    "round_": lambda v: x.clone().round_(v),
    "topk": lambda v: oar.topk(x, v),
    "split": lambda v: oar.split(x, 2, v),
    "roll": lambda v: oar.roll(x, v),
    "diagonal": lambda v: x.diagonal(axis1=v),
    "polygamma": lambda v: x.polygamma(v),
    "cumsum": lambda v: oar.cumsum(x, v),
    "flatten": lambda v: oar.flatten(x, v),
}
for name, f in calls.items():
    for v in bad:
        print("CALL", name, repr(v)[:40], flush=True)
        try:
            f(v)
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
print("DONE")
"""


def test_int_arguments_that_cannot_be_int64_raise():
    rc, out = run_child(INDEX_OPS)
    assert rc == 0 and "DONE" in out, f"child died (rc {rc}) at the last CALL:\n{out[-2000:]}"


def test_int_argument_messages_name_the_argument():
    with pytest.raises(TypeError, match="round_: argument 'decimals' must be an int, got ndarray"):
        oar.ones([2]).round_(np.arange(3))
    with pytest.raises(ValueError, match="roll: argument 'shifts' = 1180591620717411303424 does not fit"):
        oar.roll(oar.ones([3]), 2**70)
    # A 0-D NumPy integer array is an int (its __index__ works).
    assert oar.roll(oar.to_tensor([1.0, 2.0, 3.0]), np.array(1)).tolist() == [3.0, 1.0, 2.0]


# ---- integer quotients that do not fit: INT_MIN / -1 and INT_MIN % -1 trap (SIGFPE) on
# x86; NumPy and Paddle wrap the quotient and give remainder 0.

@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_overflow_wraps(dtype):
    lo = np.iinfo(dtype).min
    code = f"""
    x = oar.to_tensor(np.array([{lo}, 7, -7], dtype="{dtype}"))
    y = oar.to_tensor(np.array([-1, -1, 2], dtype="{dtype}"))
    print("FLOOR", (x // y).tolist(), "REM", (x % y).tolist(), "DIV", oar.divide(x, y).tolist())
    """
    rc, out = run_child(code)
    assert rc == 0, f"the child died (rc {rc}):\n{out}"
    with np.errstate(all="ignore"):
        a = np.array([lo, 7, -7], dtype=dtype)
        b = np.array([-1, -1, 2], dtype=dtype)
        assert f"FLOOR {(a // b).tolist()} REM {(a % b).tolist()}" in out, out


def test_integer_division_by_zero_raises():
    for expr in ("x // y", "x % y", "oar.floor_divide(x, y)", "oar.remainder(x, y)"):
        expect_raise(f"x = oar.to_tensor([4, 5]); y = oar.to_tensor([1, 0]); {expr}",
                     "ValueError", "division by zero")


# ---- iterative linalg on NaN/Inf: LAPACK's SVD/eigen solvers loop without end on them
# (pinv, matrix_rank, cond, svd, eigh all reach one); rejected before the call.

@pytest.mark.parametrize("call", [
    "oar.linalg.svd(x)", "oar.linalg.pinv(x)", "oar.linalg.matrix_rank(x)",
    "oar.linalg.cond(x)", "oar.linalg.eigh(x @ x.T)",
])
@pytest.mark.parametrize("bad", ["nan", "inf"])
def test_iterative_linalg_rejects_non_finite(call, bad):
    expect_raise(f"x = oar.to_tensor([[1.0, float('{bad}')], [2.0, 3.0]]); {call}", "ValueError",
                 "NaN or Inf")


def test_iterative_linalg_still_works_on_finite_input():
    a = np.array([[3.0, 1.0], [1.0, 2.0], [0.5, -1.0]])
    s = oar.linalg.svd(oar.to_tensor(a))[1].numpy()
    np.testing.assert_allclose(s, np.linalg.svd(a)[1], rtol=1e-10)
    np.testing.assert_allclose(oar.linalg.pinv(oar.to_tensor(a)).numpy(), np.linalg.pinv(a), rtol=1e-8)


# ---- geometry arithmetic that wraps int64: fold's kernel area kh * kw of two 2^62 sizes
# wrapped to 0 and divided by it (SIGFPE); pad's n + before + after wrapped to a small dim
# the kernel wrote past (SIGSEGV). Window sizes are bounded and sums checked first.

@pytest.mark.parametrize("call", [
    "oar.nn.functional.fold(oar.ones([3, 0, 3]), 3, 2**62)",
    "oar.nn.functional.pad(oar.ones([1, 1, 4]), [2**63 - 1, 2**63 - 1])",
    "oar.nn.Pad1D(2**63 - 1)(oar.ones([1, 1, 4]))",
    "oar.nn.functional.conv2d(oar.ones([1, 1, 4, 4]), oar.ones([1, 1, 2, 2]), padding=2**63 - 1)",
    "oar.nn.functional.conv1d(oar.ones([1, 1, 4]), oar.ones([1, 1, 2]), dilation=2**62)",
    "oar.nn.functional.fold(oar.ones([1, 4, 1]), [2**63 - 1, 2**63 - 1], 2)",
    "oar.nn.functional.unfold(oar.ones([1, 1, 4, 4]), 2**62)",
    "oar.nn.functional.unfold(oar.ones([1, 1, 4, 4]), 2, dilations=2**62)",
])
def test_conv_geometry_that_would_wrap_raises(call):
    # pad's sum is a size (MemoryError); window attributes past 2^31 are ValueError.
    op = call.split("(")[0].split(".")[-1].replace("Pad1D", "pad")
    expect_raise(call, "(ValueError, MemoryError)", op)


# ---- loops whose trip count is a user's number: building 2^31 layers ran for hours; the
# count is checked against the memory its copies need before the first one is built.

@pytest.mark.parametrize("call,needle", [
    ("oar.nn.Transformer(d_model=8, nhead=2, num_decoder_layers=2**31)", "num_layers=2147483648"),
    ("oar.nn.TransformerEncoder(oar.nn.TransformerEncoderLayer(8, 2, 16), 2**62)", "TransformerEncoder"),
])
def test_layer_counts_are_bounded_before_building(call, needle):
    expect_raise(call, "MemoryError", needle, "bytes")


def test_layer_counts_must_be_positive_ints():
    layer = oar.nn.TransformerEncoderLayer(8, 2, 16)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="TransformerEncoder: num_layers must be a positive int"):
            oar.nn.TransformerEncoder(layer, bad)
    assert len(oar.nn.TransformerEncoder(layer, 2).layers) == 2


# ---- reductions over 0-size dims (Paddle's values): sum 0, prod 1, any False, all True;
# max/min/argmax/argmin over an empty axis are an error naming the op; over a non-empty
# axis of an empty tensor they are empty results.

def test_reductions_over_zero_size_dims():
    x = oar.zeros([0, 3])
    assert oar.sum(x).item() == 0 and oar.prod(x).item() == 1
    assert oar.sum(x, 0).tolist() == [0, 0, 0] and oar.prod(x, 0).tolist() == [1, 1, 1]
    assert oar.any(x).item() is False and oar.all(x).item() is True
    assert oar.logsumexp(x, 0).tolist() == [-np.inf] * 3
    for name in ("max", "min", "amax", "amin", "argmax", "argmin"):
        f = getattr(oar, name)
        with pytest.raises(ValueError, match=f"({name}|argmax/argmin).*size 0"):
            f(x, 0)
        assert f(x, 1).shape == [0], name


# ---- counts that Python shims hand to NumPy: np.repeat sums its counts in int64, and a
# wrapped sum wrote past a small buffer (repeat_interleave with 2^62 repeats: SIGSEGV).

@pytest.mark.parametrize("call", [
    "oar.ones([4, 4, 3]).repeat_interleave(2**62)",
    "oar.ones([4, 70]).repeat_interleave(2**62, axis=0)",  # the broadcast copy of long slices
    "oar.ones([4, 70]).repeat_interleave(2**40, axis=0)",
    "oar.repeat_interleave(oar.ones([3]), oar.to_tensor([2**62, 2**62, 2**62]))",
])
def test_counts_given_to_numpy_are_checked(call):
    expect_raise(call, "MemoryError", "repeat_interleave")


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: oar.multigammaln(oar.ones([3]), 2**31), ValueError, r"multigammaln: p must be in \[1, 65536\], got 2147483648"),
    (lambda: oar.multigammaln(oar.ones([3]), 2.5), TypeError, "multigammaln: p must be an int"),
    (lambda: oar.tensor_split(oar.ones([4]), 2**32 + 1), MemoryError, "tensor_split: num_or_indices=4294967297"),
])
def test_python_loops_over_a_user_count_are_bounded_up_front(call, exc, msg):
    # compositions written in Python loop once per unit of a count the user passes (one lgamma
    # per dimension, one slice per section): a count no run could finish is refused at once
    with pytest.raises(exc, match=msg):
        call()


# ---- output sizes computed from tensor values: bincount's max(x) + 1 bins wrapped to a
# negative length for x holding 2^63 - 1, and the count loop wrote just before its buffer,
# into the allocator's chunk header (found by the checking heap; before it, an abort in an
# unrelated call hundreds of calls later). Such a count is a MemoryError naming the op.

@pytest.mark.parametrize("weights", ["None", "oar.to_tensor([0.5, 2.0])"])
@pytest.mark.parametrize("big", ["2**63 - 1", "2**62"])
def test_output_sizes_from_tensor_values_are_checked(weights, big):
    expect_raise(f"oar.bincount(oar.to_tensor(np.array([{big}, 1])), weights={weights})",
                 "MemoryError", "bincount")


def test_bincount_still_counts():
    x = np.array([2, 0, 2, 5])
    np.testing.assert_array_equal(oar.bincount(oar.to_tensor(x)).numpy(), np.bincount(x))
    w = np.array([0.5, 1.0, 2.0, -1.0])
    np.testing.assert_allclose(oar.bincount(oar.to_tensor(x), weights=oar.to_tensor(w), minlength=8).numpy(),
                               np.bincount(x, w, minlength=8))
