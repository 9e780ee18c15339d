"""16-bit float rows of clip and relu (on their bits), softmax/log_softmax (and their gradients), max/min along the
last axis and gelu's gradient, which take float vector paths (Note [16-bit softmax rows],
Note [Kernel closures in registers]); float64 softmax on SLEEF's exp. Each against a float64
NumPy reference computed from the same 16-bit inputs, on row lengths around the block sizes,
strided views, NaN and infinities, at 1 and 2 threads."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F

HALF = ["bfloat16", "float16"]
# One rounding to the 16-bit type: half a step of its 8 (bfloat16) or 11 (float16) bits.
RTOL = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11, "float32": 2e-6, "float64": 1e-13}


def _half(a, dtype):
    """(tensor of dtype, its exact values as float64)."""
    t = oar.to_tensor(np.asarray(a, np.float32)).astype(dtype)
    return t, t.astype("float64").numpy()


def _close(got, want, dtype, atol=0.0, msg=""):
    got = np.asarray(got, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=msg)
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=RTOL[dtype], atol=atol, err_msg=msg)


@pytest.mark.parametrize("dtype", HALF + ["float32", "float64"])
@pytest.mark.parametrize("view", ["contiguous", "strided", "transposed"])
@pytest.mark.parametrize("bounds", [(-0.5, 0.75), (0.3, 1.7), (None, 0.0), (-1e30, None)])
def test_clip_every_float_dtype(dtype, view, bounds, threads):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((67, 301)).astype(np.float32) * 2
    a[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5]
    x, xv = _half(a, dtype)
    if view == "strided":
        x, xv = x[:, ::3], xv[:, ::3]
    elif view == "transposed":
        x, xv = x.t(), xv.T
    lo, hi = bounds
    got = oar.clip(x, lo, hi)
    assert got.dtype == x.dtype and list(got.shape) == list(xv.shape)
    # NaN passes through; a bound is rounded to the dtype once (the same rounding as the cast).
    # A missing bound is float32's limit, as in Paddle: it clamps an infinity in float32 and
    # float64 and rounds to the infinity itself in the 16-bit types.
    def rounded(b, default):
        b = default if b is None else b
        return b if dtype == "float64" else oar.to_tensor(np.float32(b)).astype(dtype).astype("float64").item()
    big = float(np.finfo(np.float32).max)
    lo_t, hi_t = rounded(lo, -big), rounded(hi, big)
    with np.errstate(invalid="ignore"):
        want = np.where(xv < lo_t, lo_t, np.where(xv > hi_t, hi_t, xv))
    g = got.astype("float64").numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(g[ok], want[ok])


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("n", [0, 1, 15, 255, 257, 4099])
def test_clip_half_lengths_keep_bits(dtype, n, threads):
    """Contiguous 16-bit clip selects the input's own bits or the rounded bounds: every
    result bit pattern (NaN payloads and -0.0 included) equals the float32 clip rounded
    once, on lengths around the 256-element block and the thread split."""
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 2).astype(np.float32)
    a[: min(n, 5)] = [np.nan, -0.0, np.inf, -np.inf, 0.3][: min(n, 5)]
    x = oar.to_tensor(a).astype(dtype)
    got = oar.clip(x, -0.7, 1.3)
    assert got.dtype == x.dtype and list(got.shape) == [n]
    want = oar.clip(x.astype("float32"), -0.7, 1.3).astype(dtype)
    np.testing.assert_array_equal(got.view("int16").numpy(), want.view("int16").numpy())


def _softmax64(x, log):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


@pytest.mark.parametrize("dtype", HALF + ["float64"])
@pytest.mark.parametrize("n", [33, 257, 1000, 4099])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_rows_16_bit_and_float64(dtype, n, log, threads):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((9, n)).astype(np.float32) * 4
    a[1] += 60  # large logits: the max is subtracted first
    a[2, 5] = -np.inf  # a row with -inf keeps 0 / -inf there
    a[3, 7] = np.nan  # a NaN row is NaN throughout
    x, xv = _half(a, dtype)
    fn = F.log_softmax if log else F.softmax
    got = fn(x, axis=-1)
    assert got.dtype == x.dtype
    with np.errstate(invalid="ignore"):
        want = _softmax64(xv, log)
    g = got.astype("float64").numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(g[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    # float64: SLEEF's exp (1 ulp) against NumPy's; 16-bit: rounded once from float
    atol = 0.0 if dtype == "float64" or log else 1e-7
    np.testing.assert_allclose(g[fin], want[fin], rtol=RTOL[dtype] * (1.5 if dtype in HALF else 1), atol=atol)
    if dtype in HALF:  # the rows sum to 1 within the rounding of each element
        if not log:
            np.testing.assert_allclose(np.nansum(g[[0, 1, 2, 4]], axis=-1), 1.0, rtol=2 * RTOL[dtype])


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("n", [40, 1000, 4099])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_gradient_rows_16_bit(dtype, n, log, threads):
    rng = np.random.default_rng(7 + n)
    x, _ = _half(rng.standard_normal((6, n)) * 3, dtype)
    gout, gv = _half(rng.standard_normal((6, n)), dtype)
    x.stop_gradient = False
    y = (F.log_softmax if log else F.softmax)(x, axis=-1)
    dx, = oar.grad([y], [x], grad_outputs=[gout])
    assert dx.dtype == x.dtype
    yv = y.astype("float64").numpy()  # the gradient reads the rounded output, as Paddle's kernel
    if log:
        want = gv - np.exp(yv) * gv.sum(-1, keepdims=True)
    else:
        want = yv * (gv - (gv * yv).sum(-1, keepdims=True))
    scale = np.abs(want).max()
    _close(dx.astype("float64").numpy(), want, dtype, atol=1e-5 * scale)


def test_softmax_16_bit_columns_and_views_unchanged():
    # along a middle axis and on a transposed view: the column path, against float64
    rng = np.random.default_rng(3)
    x, xv = _half(rng.standard_normal((4, 70, 50)), "bfloat16")
    for axis in (1, 0):
        got = F.softmax(x, axis=axis).astype("float64").numpy()
        m = xv.max(axis=axis, keepdims=True)
        e = np.exp(xv - m)
        np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=2.0 ** -7, atol=1e-7)
    got = F.softmax(x.transpose([0, 2, 1]), axis=-1).astype("float64").numpy()
    np.testing.assert_allclose(got, _softmax64(xv.transpose(0, 2, 1), False), rtol=2.0 ** -7, atol=1e-7)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape", [(5, 1), (3, 1023), (4, 1025), (2, 3000), (1, 140001)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_rows_16_bit(dtype, shape, op, threads):
    rng = np.random.default_rng(shape[1])
    a = rng.standard_normal(shape).astype(np.float32) * 100
    if shape[0] > 2:
        a[1, -1] = np.nan  # NaN in the last block makes the row NaN
        a[2, 0] = np.inf if op == "max" else -np.inf
    x, xv = _half(a, dtype)
    got = getattr(x, op)(axis=-1)
    assert got.dtype == x.dtype
    with np.errstate(invalid="ignore"):
        want = getattr(np, op)(xv, axis=-1)  # NaN propagates, as in Paddle
    g = got.astype("float64").numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
    np.testing.assert_array_equal(g[~np.isnan(want)], want[~np.isnan(want)])
    whole = getattr(x, op)().astype("float64").item()
    w = getattr(np, op)(xv)
    assert (np.isnan(whole) and np.isnan(w)) or whole == w


def _gelu_d1(x, approximate):
    from math import erf, pi, sqrt
    if approximate:
        k = sqrt(2 / pi)
        u = k * (x + 0.044715 * x ** 3)
        t = np.tanh(u)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    cdf = 0.5 * (1 + np.vectorize(erf)(x / sqrt(2)))
    return cdf + x * np.exp(-0.5 * x * x) / sqrt(2 * pi)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("view", ["contiguous", "column_slice"])
def test_gelu_gradient_16_bit(dtype, approximate, view, threads):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((33, 517)).astype(np.float32) * 3
    a[0, :4] = [0.0, -0.0, 8.0, -8.0]
    x, xv = _half(a, dtype)
    gout, gv = _half(rng.standard_normal(a.shape), dtype)
    if view == "column_slice":
        x, xv, gout, gv = x[:, 3:400], xv[:, 3:400], gout[:, 3:400], gv[:, 3:400]
    x.stop_gradient = False
    dx, = oar.grad([F.gelu(x, approximate=approximate)], [x], grad_outputs=[gout])
    assert dx.dtype == x.dtype
    want = gv * _gelu_d1(xv, approximate)
    # float arithmetic (vec::erf, vec::tanh: a few float ulps) and one rounding to the dtype
    # (the tanh form's 1 - t^2 cancels near |x| = 4: a few 1e-6 in float, as in float32's kernel)
    _close(dx.astype("float64").numpy(), want, dtype, atol=1e-5 * np.abs(gv).max(), msg=f"approximate={approximate}")


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape,axis", [((7, 3001), -1), ((2, 5), 1), ((1, 0), -1), ((40, 33), 0), ((6000,), 0)])
def test_cumsum_16_bit_rows(dtype, shape, axis, threads):
    # 16-bit rows through float's vector scan (sums in double, rounded to float, then to the
    # dtype); the sums of these values are exact in double, so against NumPy's float64 cumsum
    # rounded the same way, bit for bit. Along axis 0 (the element loop) too.
    rng = np.random.default_rng(sum(shape))
    x, xv = _half(rng.standard_normal(shape) * 8, dtype)
    got = oar.cumsum(x, axis=axis)
    assert got.dtype == x.dtype
    want = oar.to_tensor(np.cumsum(xv, axis=axis).astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(got.astype("float32").numpy(), want.astype("float32").numpy())


@pytest.mark.parametrize("tx,ty", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shape", [((65, 130), (130, 33)), ((3, 40, 17), (3, 17, 50)), ((0, 8), (8, 5)),
                                   ((1, 300), (300, 1))])
def test_float16_matmul_through_float(tx, ty, shape, threads):
    # float16 products widen both operands (F16C) into per-thread scratch, run sgemm and round
    # once (F16C): against float64 NumPy on the same halves, batched (one product per thread)
    # and transposed operands included
    rng = np.random.default_rng(len(shape[0]) + shape[0][-1])
    a = rng.standard_normal(shape[0]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    x, xv = _half(np.swapaxes(a, -1, -2).copy() if tx else a, "float16")
    y, yv = _half(np.swapaxes(b, -1, -2).copy() if ty else b, "float16")
    out = oar.matmul(x, y, transpose_x=tx, transpose_y=ty)
    assert out.dtype == x.dtype
    av = np.swapaxes(xv, -1, -2) if tx else xv
    bv = np.swapaxes(yv, -1, -2) if ty else yv
    want = av @ bv
    k = av.shape[-1]
    _close(out.astype("float64").numpy(), want, "float16", atol=2e-6 * k * (np.abs(av).max(initial=0) * np.abs(bv).max(initial=0)))


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("mode,align", [("nearest", False), ("bilinear", False), ("bilinear", True),
                                        ("bicubic", False), ("linear", False), ("trilinear", True)])
def test_interpolate_16_bit_through_float(dtype, mode, align, threads):
    # 16-bit input widened once, the float kernel, rounded once: bit for bit the float32
    # result of the widened input, rounded to the dtype
    rng = np.random.default_rng(11)
    nd = {"linear": 1, "trilinear": 3}.get(mode, 2)
    shape = (2, 3) + (9, 13, 6)[:nd]
    x, _ = _half(rng.standard_normal(shape) * 4, dtype)
    kw = {} if mode == "nearest" else {"align_corners": align}
    got = F.interpolate(x, scale_factor=[1.7] * nd, mode=mode, **kw)
    assert got.dtype == x.dtype
    want = F.interpolate(x.astype("float32"), scale_factor=[1.7] * nd, mode=mode, **kw).astype(dtype)
    np.testing.assert_array_equal(got.astype("float32").numpy(), want.astype("float32").numpy())


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape,cond_shape", [((7, 33), (7, 33)), ((64, 257), (257,)), ((0, 5), (0, 5))])
def test_where_half_selects_bits(dtype, shape, cond_shape, threads):
    """where on 16-bit floats selects bit patterns: NaN payloads, -0.0 and infinities come
    through unchanged, with a broadcast condition and a strided operand."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    if a.size:
        a.flat[:4] = [np.nan, -0.0, np.inf, -np.inf]
        b.flat[:4] = [-np.inf, np.nan, -0.0, 1e-40]
    x, y = oar.to_tensor(a).astype(dtype), oar.to_tensor(b).astype(dtype)
    c = rng.random(cond_shape) < 0.5
    got = oar.where(oar.to_tensor(c), x, y)
    want = np.where(c, x.view("int16").numpy(), y.view("int16").numpy())
    np.testing.assert_array_equal(got.view("int16").numpy(), want)
    if shape[1] > 1:  # a strided x
        xs = oar.to_tensor(np.repeat(a, 2, axis=1)).astype(dtype)[:, ::2]
        got = oar.where(oar.to_tensor(c), xs, y)
        np.testing.assert_array_equal(got.view("int16").numpy(), want)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape", [(1024, 1024), (37, 29), (3, 5, 300), (0, 8)])
def test_half_column_sums(dtype, shape, threads):
    """sum and nansum along axis 0 (the column-sum path) of 16-bit floats: the same float
    sums, in the same order, as the float32 column sums of the widened values."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(np.float32)
    if a.size:
        a.flat[7] = np.nan
    x = oar.to_tensor(a).astype(dtype)
    for fn in (oar.sum, oar.nansum):
        got = fn(x, axis=0)
        assert got.dtype == x.dtype
        want = fn(x.astype("float32"), axis=0).astype(dtype)
        np.testing.assert_array_equal(got.view("int16").numpy(), want.view("int16").numpy())


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("k", [1, 5, 40])
@pytest.mark.parametrize("largest", [True, False])
def test_half_topk_rows(dtype, k, largest, threads):
    """topk along rows of 16-bit floats (the scan skips 8 widened values a compare): the
    values and indices of the float32 topk of the widened values, ties to the smaller index,
    NaN as the largest."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 1000)).astype(np.float32)
    a[1, 500] = np.nan
    a[2, :] = np.round(a[2, :])  # many ties
    x = oar.to_tensor(a).astype(dtype)
    v, i = oar.topk(x, k, axis=-1, largest=largest)
    v32, i32 = oar.topk(x.astype("float32"), k, axis=-1, largest=largest)
    np.testing.assert_array_equal(i.numpy(), i32.numpy())
    np.testing.assert_array_equal(v.view("int16").numpy(), v32.astype(dtype).view("int16").numpy())


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_relu_every_16_bit_pattern(dtype, layout, threads):
    """relu of 16-bit floats selects bits (contiguous: on the bit patterns alone): every one
    of the 65536 patterns gives x where x > 0 and +0 elsewhere (-0, negatives, NaN), as the
    float compare does; its gradient passes g's bits where the output is > 0. In place too."""
    bits = np.arange(-32768, 32768, dtype=np.int16)
    x = oar.to_tensor(bits.reshape(256, 256)).view(dtype)
    if layout == "strided":
        x = oar.to_tensor(np.stack([bits, bits], 1).reshape(256, 512)).view(dtype)[:, ::2]
    v = x.astype("float64").numpy()
    want = np.where(v > 0, bits.reshape(256, 256), 0).astype(np.int16)
    np.testing.assert_array_equal(F.relu(x).view("int16").numpy() if layout == "contiguous"
                                  else F.relu(x).contiguous().view("int16").numpy(), want)
    g_bits = np.random.default_rng(1).integers(-32768, 32768, (256, 256)).astype(np.int16)
    g = oar.to_tensor(g_bits).view(dtype)
    xg = x.detach()
    xg.stop_gradient = False
    F.relu(xg).backward(g)
    np.testing.assert_array_equal(xg.grad.view("int16").numpy(), np.where(v > 0, g_bits, 0))
    y = x.contiguous()
    F.relu_(y)
    np.testing.assert_array_equal(y.view("int16").numpy(), want)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_abs_neg_every_16_bit_pattern(dtype, layout, threads):
    """abs and neg of 16-bit floats (contiguous: on the bits alone) clear and flip the sign
    bit of every one of the 65536 patterns, NaN payloads and -0 included, as fabs and
    negation do to a float."""
    bits = np.arange(-32768, 32768, dtype=np.int16)
    x = oar.to_tensor(bits.reshape(256, 256)).view(dtype)
    if layout == "strided":
        x = oar.to_tensor(np.stack([bits, bits], 1).reshape(256, 512)).view(dtype)[:, ::2]
    u = bits.reshape(256, 256).view(np.uint16)
    for op, want in ((oar.abs, u & 0x7FFF), (oar.neg, u ^ 0x8000)):
        got = op(x).contiguous().view("int16").numpy().view(np.uint16)
        if layout == "strided":  # through float: a NaN comes back as the type's quiet NaN
            nan = np.isnan(x.astype("float32").numpy())
            np.testing.assert_array_equal(np.isnan(op(x).astype("float32").numpy()), nan)
            got, want = got[~nan], want[~nan]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_abs_of_negative_zero_is_positive_zero(dtype):
    """abs(-0.0) is +0.0 (NumPy, Paddle, torch): 1 / abs(x) is +inf there, not -inf."""
    x = oar.to_tensor(np.array([-0.0, 0.0, -2.5], np.float32)).astype(dtype)
    got = oar.abs(x).astype("float64").numpy()
    assert not np.signbit(got).any()
    np.testing.assert_array_equal(got, [0.0, 0.0, 2.5])
    assert (1.0 / oar.abs(x).astype("float32")).numpy()[0] == np.inf


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("axis", [0, 1, (0, 1), (0, 2)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_16_bit_leading_axes(dtype, axis, op, threads):
    """max/min of 16-bit floats over leading axes (rows of the inner dims folded in float):
    exactly NumPy's extrema of the same values, NaN winning wherever it occurs in the
    reduced range, infinities kept."""
    rng = np.random.default_rng(14)
    a = rng.standard_normal((33, 20, 70)).astype(np.float32)
    a[3, 4, 5] = np.nan
    a[30, 2, 69] = np.nan
    a[7, 8, 9] = np.inf
    a[8, 9, 10] = -np.inf
    x, v = _half(a, dtype)
    got = getattr(oar, op)(x, axis=axis).astype("float64").numpy()
    want = getattr(np, op)(v, axis=axis)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).any()
