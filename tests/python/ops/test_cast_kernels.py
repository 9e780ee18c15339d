"""The cast kernel between every pair of real dtypes (cast_kernels.cc: cast_chunk's vector
paths, the blocks through float or int32 and the element loop) against NumPy references, at
lengths around the vector widths and the 512-element blocks, at 1 and 2 threads: the values
include NaN, +-inf, values past every integer type and halfway cases."""
import math

import numpy as np
import pytest

import oar

REAL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
INTS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
SPECIAL = [math.nan, math.inf, -math.inf, 1e30, -1e30, 3e9, -3e9, 2.0**63, -(2.0**63), 2.0**31, -(2.0**31),
           -(2.0**31) - 1, 2.9, -2.9, -0.0, 0.5, 255.9, 256.0, -129.5, 32767.7, -32768.9, 65519.0, 65520.0,
           16777217.0, 2.0**24 + 2.0**16 + 1]
LENGTHS = [0, 1, 7, 8, 17, 33, 64, 515, 1025, 4099]


def _bf16_round(a):
    """float32 -> bfloat16, round to nearest even (NaN kept quiet), as float32."""
    u = a.astype("float32").view("uint32").astype("uint64")
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("uint32")
    r = np.where(np.isnan(a), ((u >> 16) | 0x40).astype("uint32"), r)
    return (r << 16).astype("uint32").view("float32")


def _values(src, n, rng):
    """n values of dtype src as a NumPy array (bfloat16's as float32 holding bfloat16 values)."""
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src in INTS:
        info = np.iinfo(src)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=src)
    v = rng.standard_normal(n) * rng.choice([1.0, 100.0, 3e4, 1e10], n)
    pick = rng.integers(0, 3, n) == 0
    v[pick] = rng.choice(SPECIAL, int(pick.sum()))
    with np.errstate(over="ignore"):
        if src == "bfloat16":
            return _bf16_round(v.astype("float32"))
        return v.astype(src)


def _float_to_int(v, dst):
    """paddle_core/tensor/float_to_int.h: truncate into int32 (int64 for int64); NaN and values
    outside it give its minimum; then the low bits of dst's width."""
    v = v.astype("float64")
    if dst == "int64":
        fits = (v >= -(2.0**63)) & (v < 2.0**63)
        w = np.where(fits, np.trunc(np.where(fits, v, 0)), 0).astype("int64")
        return np.where(fits, w, np.iinfo("int64").min)
    fits = (v > -(2.0**31) - 1) & (v < 2.0**31)
    w = np.where(fits, np.trunc(np.where(fits, v, 0)), np.iinfo("int32").min).astype("int64")
    return w.astype(dst)  # wraps to the width


def _reference(vals, src, dst):
    if dst == "bool":
        return vals != 0
    if dst in INTS:
        return _float_to_int(vals, dst) if src in FLOATS else vals.astype("int64").astype(dst)
    with np.errstate(over="ignore"):
        wide = vals.astype("float64")
        if dst == "float64":
            return wide
        as_float = vals.astype("float32")  # the 16-bit floats round from float, as the kernel
        if dst == "float32":
            return as_float
        return as_float.astype("float16") if dst == "float16" else _bf16_round(as_float)


def _tensor(vals, src):
    return oar.to_tensor(vals).astype("bfloat16") if src == "bfloat16" else oar.to_tensor(vals)


def _as_numpy(t, dst):
    return t.astype("float32").numpy() if dst == "bfloat16" else t.numpy()


@pytest.mark.parametrize("src,dst", [(a, b) for a in REAL for b in REAL if a != b])
def test_cast_every_pair_against_numpy(src, dst, threads):
    rng = np.random.default_rng(REAL.index(src) * 16 + REAL.index(dst))
    for n in LENGTHS:
        vals = _values(src, n, rng)
        got = _as_numpy(_tensor(vals, src).astype(dst), dst)
        want = _reference(vals, src, dst)
        assert got.shape == (n,), (src, dst, n)
        if dst in FLOATS:
            nan = np.isnan(want)
            np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{src} -> {dst}, n={n}: NaN lanes")
            bits = "uint16" if dst == "float16" else "uint64" if dst == "float64" else "uint32"
            np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].astype(got.dtype).view(bits),
                                          err_msg=f"{src} -> {dst}, n={n}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}, n={n}")


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", INTS)
def test_float_to_int_of_a_strided_view(src, dst):
    """A strided float input is made contiguous, then converted by the same vector loops."""
    rng = np.random.default_rng(7)
    vals = _values(src, 2 * 1031, rng)
    got = _tensor(vals, src)[::2].astype(dst).numpy()
    np.testing.assert_array_equal(got, _float_to_int(vals[::2], dst))
