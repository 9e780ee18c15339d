"""floor, ceil, trunc and round of floats on their vector lanes (math_functions_kernels.cc:
vec::round_to, and round's trunc(v + copysign(h, v)) with h the float just below 1/2): bit for
bit against NumPy over random bit patterns (every exponent, NaNs, subnormals, signed zeros)
and the cases next to 1/2 and to the largest fractional floats, every float dtype, lengths
around the vector widths, at 1 and 2 threads."""
import numpy as np
import pytest

import oar

FLOATS = ["float32", "float64", "float16", "bfloat16"]
BITS = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}


def _bf16(a):
    """float32 values to the nearest bfloat16 (even on ties), as float32."""
    u = a.astype("float32").view("uint32").astype("uint64")
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("uint32")
    r = np.where(np.isnan(a), ((u >> 16) | 0x40).astype("uint32"), r)
    return (r << 16).astype("uint32").view("float32")


def _edge_values(dtype):
    """Values where a rounding is easy to get wrong, exact in dtype."""
    p = BITS[dtype]
    big = 2.0 ** (p - 1)  # from here up, a float has no bit below 1/2
    v = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, 0.3, -0.3, 0.7, -0.7, np.inf, -np.inf, np.nan,
         1.0 - 2.0 ** -p, 0.5 - 2.0 ** -(p + 1), 1.5 - 2.0 ** -(p - 1), 2.0 ** -(p + 3)]
    for s in (1.0, -1.0):
        v += [s * (big + d) for d in (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)]
        v += [s * (2 * big + d) for d in (0.0, 2.0)]
        v += [s * (big / 2 + d) for d in (-0.75, -0.5, -0.25, 0.25, 0.5, 0.75)]
    return np.array(v, dtype="float64")


def _random_bits(dtype, n, rng):
    if dtype == "float64":
        return rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True).view("float64")
    if dtype == "float32":
        return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view("float32")
    u = rng.integers(0, 1 << 16, n, dtype=np.uint64).astype(np.uint16)
    if dtype == "float16":
        return u.view("float16")
    return (u.astype(np.uint32) << 16).view("float32")


def _as_dtype(v, dtype):
    """v (NumPy) rounded to dtype's values, as the NumPy dtype that holds them."""
    with np.errstate(over="ignore"):
        if dtype == "bfloat16":
            return _bf16(v.astype("float32"))
        return v.astype(dtype)


def _round_half_away(a):
    """C's round on float64 values (exact: |a| - floor(|a|) has no rounding)."""
    m = np.abs(a)
    f = np.floor(m)
    with np.errstate(invalid="ignore"):
        r = np.where(m - f >= 0.5, f + 1, f)
    return np.where(np.isfinite(a), np.copysign(r, a), a)


def _check(name, got, want, dtype):
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{name} {dtype}: NaN lanes")
    bits = {"float64": "uint64", "float16": "uint16"}.get(dtype, "uint32")
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits), err_msg=f"{name} {dtype}")


def _run(op, x, dtype):
    t = oar.to_tensor(x)
    if dtype == "bfloat16":
        t = t.astype("bfloat16")
    r = op(t)
    assert r.dtype == t.dtype
    return r.astype("float32").numpy() if dtype == "bfloat16" else r.numpy()


@pytest.mark.parametrize("dtype", FLOATS)
def test_rounding_bit_for_bit(dtype, threads):
    rng = np.random.default_rng(BITS[dtype])
    edge = _as_dtype(_edge_values(dtype), dtype)
    ops = {"floor": (oar.floor, np.floor), "ceil": (oar.ceil, np.ceil), "trunc": (oar.trunc, np.trunc),
           "round": (oar.round, _round_half_away)}
    for n in (1, 15, 16, 17, 33, 1001, 70003):
        x = np.concatenate([edge, _random_bits(dtype, n, rng)])[:max(n, len(edge))]
        for name, (f, ref) in ops.items():
            got = _run(f, x, dtype)
            with np.errstate(invalid="ignore"):
                want = _as_dtype(ref(x.astype("float64")), dtype)
            _check(f"{name} n={n}", got, want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_to_decimals(dtype, decimals):
    """round(x, decimals): round(x 10^d) / 10^d in x's dtype, as Paddle computes it."""
    rng = np.random.default_rng(decimals + 5)
    x = np.concatenate([rng.uniform(-100, 100, 997), [0.25, -0.25, 0.05, 125.0, -125.0, 0.0, -0.0]]).astype(dtype)
    s = np.array(10.0 ** decimals, dtype)
    want = (_round_half_away((x * s).astype("float64")).astype(dtype) / s).astype(dtype)
    got = oar.round(oar.to_tensor(x), decimals).numpy()
    np.testing.assert_array_equal(got, want)
