"""Regressions for the undefined-behaviour classes of the sanitizer run (scripts/sanitize.sh,
Note [Robustness]: ASan + UBSan with float-cast-overflow), one test per class. Under that
build each case aborts at the faulty line if the class comes back; the values are also checked
in the normal build (the integer clip was wrong there: a default bound cast to INT_MIN)."""
import math

import numpy as np
import pytest

import oar

INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]
BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}
SPECIAL = [math.nan, math.inf, -math.inf, 1e30, -1e30, 3e9, -3e9, 2.9, -2.9, 300.0, -129.5, 2.0**63]


def float_to_int(v, dtype):
    """paddle_core/tensor/float_to_int.h: truncate into int32 (int64 for int64); NaN and
    values outside that give its minimum (x86's value for a bare cast); wrap to the width."""
    w = 64 if dtype == "int64" else 32
    if math.isnan(v) or not -(2.0 ** (w - 1)) - (w == 32) < v < 2.0 ** (w - 1):
        r = -(1 << (w - 1))
    else:
        r = int(v)
    bits = BITS[dtype]
    r &= (1 << bits) - 1
    if dtype != "uint8" and r >= 1 << (bits - 1):
        r -= 1 << bits
    return r


# ---- float -> integer conversions of NaN, inf and values past the type (UB in C++): cast,
# astype, fills from a Python float, complex -> int.

@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_float_to_int_conversions_are_defined(dtype, src):
    vals = [float(np.asarray(v, dtype=src)) if not math.isnan(v) else v for v in SPECIAL]
    want = [float_to_int(v, dtype) for v in vals]
    x = oar.to_tensor(np.array(vals, dtype=src))
    assert oar.cast(x, dtype).tolist() == want
    assert x.astype(dtype).tolist() == want
    assert [oar.full([1], v, dtype).item() for v in vals] == want
    c = oar.to_tensor(np.array([complex(v, 1.0) for v in vals], dtype="complex128"))
    assert oar.cast(c, dtype).tolist() == want
    # copies into an integer tensor convert element by element (copy kernel)
    y = oar.zeros([len(vals)], dtype)
    y[:] = x
    assert y.tolist() == want
    z = oar.zeros([len(vals)], dtype)
    z.copy_(x, False)
    assert z.tolist() == want


# ---- integer clip: bounds past the type (the defaults are +-FLT_MAX) were cast to the
# integer type (UB; INT_MIN on x86, so clip(x, min=-2) set everything to INT_MIN).

@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_clip_with_bounds_past_the_type(dtype):
    a = np.array([1, -7, 9, np.iinfo(dtype).min, np.iinfo(dtype).max], dtype=dtype)
    x = oar.to_tensor(a)
    assert oar.clip(x, min=-2).tolist() == np.clip(a, -2, None).tolist()
    assert oar.clip(x, max=5).tolist() == np.clip(a, None, 5).tolist()
    # a float bound clips in float32, as Paddle documents (the bound is not truncated)
    f = a.astype(np.float32)
    for lo, hi in ((-1e30, 1e30), (-2.5, 5.5), (1e30, 2e30)):
        r = oar.clip(x, min=lo, max=hi)
        assert r.dtype == oar.float32
        assert r.tolist() == np.clip(f, np.float32(lo), np.float32(hi)).tolist()


# ---- signed integer arithmetic that overflows (UB in C++): it wraps, as in NumPy/Paddle.

@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_signed_integer_arithmetic_wraps(dtype):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([hi, lo, hi, lo, 5], dtype=dtype)
    b = np.array([1, -1, hi, lo, 2], dtype=dtype)
    x, y = oar.to_tensor(a), oar.to_tensor(b)
    with np.errstate(over="ignore"):
        assert (x + y).tolist() == (a + b).tolist()
        assert (x - y).tolist() == (a - b).tolist()
        assert (x * y).tolist() == (a * b).tolist()
        assert (-x).tolist() == (-a).tolist()
        assert oar.abs(x).tolist() == np.abs(a).tolist()
        assert oar.prod(x).item() == np.prod(a, dtype=dtype)
        assert oar.prod(y).item() == np.prod(b, dtype=dtype)
    # scale's factor and bias are truncated to the integer type; the products wrap.
    assert oar.scale(x, 2.0, 1.0).tolist() == (a * np.array(2, dtype) + np.array(1, dtype)).tolist()
    oar.scale(x, 1e30, math.nan)  # out-of-range scale and NaN bias: defined values, no abort


# ---- integer powers computed in double whose result does not fit the type.

def test_integer_power_past_the_type():
    x = oar.to_tensor(np.array([10, 2, -3], dtype="int64"))
    assert oar.pow(x, 3).tolist() == [1000, 8, -27]
    assert oar.pow(x, 30).tolist()[0] == float_to_int(1e30, "int64")
    assert (x ** oar.to_tensor(np.array([30, 3, 3], dtype="int64"))).tolist() == [
        float_to_int(1e30, "int64"), 8, -27]


# ---- coordinates and fill values from user floats: grid_sample's NaN/huge grid points
# (cast to int64 for the neighbour index), pad's fill value and linspace's bounds for an
# integer tensor.

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_with_non_finite_and_huge_grid_points(mode, padding):
    import oar.nn.functional as F
    img = oar.ones([1, 1, 3, 3])
    grid = np.array([np.nan, 0, 1e30, 0, 0, 0, -np.inf, 5], dtype="float32").reshape(1, 2, 2, 2)
    out = F.grid_sample(img, oar.to_tensor(grid), mode=mode, padding_mode=padding,
                        align_corners=False).numpy().ravel()
    assert out.shape == (4,) and out[2] == 1.0
    if mode == "nearest" and padding == "zeros":
        assert out.tolist() == [0.0, 0.0, 1.0, 0.0]


def test_integer_fill_values_from_non_finite_floats():
    import oar.nn.functional as F
    x = oar.to_tensor(np.arange(6, dtype="int32").reshape(1, 1, 2, 3))
    for v in (math.nan, 1e30):
        row = F.pad(x, [1, 1, 0, 0], value=v).numpy()[0, 0, 0].tolist()
        assert row == [float_to_int(v, "int32"), 0, 1, 2, float_to_int(v, "int32")]
    assert oar.linspace(math.nan, 5, 3, "int32").tolist()[::2] == [float_to_int(math.nan, "int32"), 5]


# ---- the float32 exp polynomial of softmax/log_softmax (phi_kernels/funcs/softmax_rows.h)
# converted its exponent to int32 before it looked at NaN: a NaN logit was a float -> int cast
# of NaN (found by the fuzzer under the sanitizer build). Short rows (that kernel) and long rows.

@pytest.mark.parametrize("n", [4, 300])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_of_non_finite_logits(n, log):
    import oar.nn.functional as F
    rng = np.random.default_rng(n)
    x = rng.standard_normal([6, n]).astype("float32")
    x[0, 1], x[1, 2], x[2, 0], x[3, 3], x[4, :] = np.nan, np.inf, -np.inf, 1e30, -np.inf
    got = (F.log_softmax if log else F.softmax)(oar.to_tensor(x), axis=-1).numpy()
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        shifted = x64 - x64.max(axis=-1, keepdims=True)
        want = np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)
        if log:
            want = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5, atol=1e-6, equal_nan=True)


# ---- arange's element count and values: end - start of two int64s overflowed (0 elements
# for a range wider than 2^63), a float count past int64 was cast to int64.

def test_arange_over_ranges_wider_than_int64():
    lo, hi = -2**63, 2**63 - 1
    assert oar.arange(lo, hi, 2**62).tolist() == list(range(lo, hi, 2**62))
    assert oar.arange(hi, lo, -2**62).tolist() == list(range(hi, lo, -2**62))
    assert oar.arange(lo, lo + 3, 1).tolist() == [lo, lo + 1, lo + 2]
    with pytest.raises(ValueError, match="arange: .* more than int64 counts"):
        oar.arange(lo, hi, 1)
    with pytest.raises(ValueError, match="arange: .* more than int64 counts"):
        oar.arange(0.0, 1e20, 1.0)
    with pytest.raises(MemoryError):
        oar.arange(0.0, 1e18, 1.0)


# ---- slice lengths: (end - start + step - 1) / step overflowed int64 for a step near 2^63
# (x[::2**63 - 1] was empty), -step for step == -2**63.

def test_slices_with_steps_near_int64_limits():
    a = np.arange(10.0)
    x = oar.to_tensor(a)
    big = 2**63 - 1
    for sl in [slice(0, 3, big), slice(None, None, big), slice(None, None, -big),
               slice(None, None, -big - 1), slice(8, 1, -3), slice(None, None, -1), slice(2, 9, 4),
               slice(-3, None, 2**62), slice(5, 5, big), slice(5, 5, -big - 1)]:
        assert x[sl].tolist() == a[sl].tolist(), sl


# ---- bool tensors from files: a byte other than 0/1 is not a bool (loading it in a kernel
# is undefined); oar.load reads such bytes as byte != 0.

def test_loaded_bool_bytes_are_bools(tmp_path):
    import json
    import struct
    head = json.dumps({"x": {"dtype": "BOOL", "shape": [4], "data_offsets": [0, 4]}}).encode()
    head += b" " * (-len(head) % 8)
    path = tmp_path / "b.safetensors"
    path.write_bytes(struct.pack("<Q", len(head)) + head + bytes([0, 1, 2, 255]))
    t = oar.load(str(path))["x"]
    assert t.numpy().view(np.uint8).tolist() == [0, 1, 1, 1]
    assert (~t).tolist() == [True, False, False, False]
    assert t.astype("int32").tolist() == [0, 1, 1, 1]
