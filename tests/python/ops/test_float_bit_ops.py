"""copysign, nextafter, frac and gcd kernels (binary_kernels.cc: copysign and nextafter on the
floats' bits, gcd by Stein's algorithm; math_functions_kernels.cc: frac on vector lanes)
against NumPy, bit for bit, over random bit patterns (every exponent, subnormals, signed zeros,
NaNs, infinities) and integer extremes, at lengths around the vector widths and at 1 and 2
threads."""
import numpy as np
import pytest

import oar

LENGTHS = (1, 7, 33, 1001)
UINT = {"float64": np.uint64, "float32": np.uint32, "float16": np.uint16}


def _bits(dtype, n, rng):
    """n random bit patterns of a float dtype, plus its edge values."""
    u = UINT[dtype]
    b = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dtype)
    info = np.finfo(dtype)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny, info.smallest_subnormal,
                     -info.smallest_subnormal, 1.0, -1.0, 0.5], dtype)
    return np.concatenate([edge, b])[:max(n, len(edge))]


def _same_bits(got, want, what):
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN lanes")
    u = UINT[str(want.dtype)]
    np.testing.assert_array_equal(got[~nan].view(u), want[~nan].view(u), err_msg=what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nextafter_random_bits(dtype, threads):
    rng = np.random.default_rng(3)
    for n in LENGTHS:
        x = _bits(dtype, n, rng)
        y = _bits(dtype, n, rng)
        k = rng.integers(0, 4, len(x))  # y = x, and y just either side of x
        y = np.where(k == 1, x, y)
        y = np.where(k == 2, -y, y)
        got = oar.nextafter(oar.to_tensor(x), oar.to_tensor(y)).numpy()
        _same_bits(got, np.nextafter(x, y), f"nextafter {dtype} n={n}")
        # a one-value y (the broadcast lanes)
        for t in (np.inf, -np.inf, 0.0, -0.0):
            yt = np.array([t], dtype)
            got = oar.nextafter(oar.to_tensor(x), oar.to_tensor(yt)).numpy()
            _same_bits(got, np.nextafter(x, yt), f"nextafter {dtype} n={n} towards {t}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_copysign_and_frac_random_bits(dtype, threads):
    rng = np.random.default_rng(4)
    for n in LENGTHS:
        src = "float32" if dtype == "bfloat16" else dtype
        x, y = _bits(src, n, rng), _bits(src, n, rng)
        if dtype == "bfloat16":  # bfloat16 values: float32 with the low half cleared
            x = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
            y = (y.view(np.uint32) & 0xFFFF0000).view(np.float32)
        xt, yt = oar.to_tensor(x).astype(dtype), oar.to_tensor(y).astype(dtype)
        back = (lambda t: t.astype("float32").numpy()) if dtype == "bfloat16" else (lambda t: t.numpy())
        want = np.copysign(x, y)
        got = back(oar.copysign(xt, yt))
        _same_bits(got, want, f"copysign {dtype} n={n}")
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(y[nan]), err_msg="copysign: NaN's sign")
        with np.errstate(invalid="ignore"):
            want = x - np.trunc(x)
        _same_bits(back(oar.frac(xt)), want, f"frac {dtype} n={n}")


def test_copysign_gradient_and_dtypes():
    """d/dx copysign(x, y) = sign(x) times y's sign (0 at x = 0); y gets zeros. An integer x
    becomes the default float; a float64 y does not widen x; a number y is allowed."""
    x = oar.to_tensor([2.0, -3.0, 0.0, 1.5], "float64", stop_gradient=False)
    y = oar.to_tensor([-1.0, -0.0, 5.0, 0.0], "float64", stop_gradient=False)
    gx, gy = oar.grad([oar.copysign(x, y).sum()], [x, y])
    np.testing.assert_array_equal(gx.numpy(), [-1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0, 0.0, 0.0])
    assert oar.copysign(oar.to_tensor([1, -2]), oar.to_tensor([-1.0])).dtype == oar.float32
    assert oar.copysign(oar.to_tensor([1.0]), oar.to_tensor([-1.0], "float64")).dtype == oar.float32
    np.testing.assert_array_equal(oar.copysign(oar.to_tensor([1.0, -2.0]), -0.0).numpy(), [-1.0, -2.0])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_gcd_against_numpy(dtype, threads):
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    edge = np.array([0, 1, info.max, info.min, info.min + 1, 12, 18], dtype)
    for n in LENGTHS:
        a = np.concatenate([edge, rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)])
        b = np.concatenate([edge[::-1], rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)])
        b[: len(b) // 3] = a[: len(b) // 3] * 3  # common factors
        got = oar.gcd(oar.to_tensor(a), oar.to_tensor(b))
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.numpy(), np.gcd(a, b), err_msg=f"gcd {dtype} n={n}")
        col = a.reshape(-1, 1)[:9]  # broadcast [9, 1] with [len]
        np.testing.assert_array_equal(oar.gcd(oar.to_tensor(col), oar.to_tensor(b)).numpy(), np.gcd(col, b))
    six = 6 if dtype == "uint8" else -6
    lcm = oar.lcm(oar.to_tensor(np.array([4, six, 0, 7], dtype)), oar.to_tensor(np.array([6, 4, 5, 7], dtype)))
    np.testing.assert_array_equal(lcm.numpy(), [12, 12, 0, 7])
