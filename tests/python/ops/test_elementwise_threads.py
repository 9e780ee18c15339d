"""Pointwise kernels whose iteration space is one long row (a coalesced strided or
broadcast operand), split across 2 threads (elementwise.h's for_each_row cuts rows when
there are fewer rows than threads), and 16-bit float results stored from vectorized loops:
against NumPy, bit for bit."""
import numpy as np
import pytest

import oar


@pytest.fixture
def two_threads():
    before = oar.get_num_threads()
    oar.set_num_threads(2)
    yield
    oar.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 17, 65537, 200003])
def test_strided_and_broadcast_rows_at_two_threads(n, two_threads):
    rng = np.random.default_rng(n)
    xb = rng.standard_normal(2 * n).astype("float32")
    yb = rng.standard_normal(n).astype("float32")
    x = oar.to_tensor(xb)[::2]  # stride 2: not the contiguous fast path
    y = oar.to_tensor(yb)
    xs = xb[::2]
    np.testing.assert_array_equal((x + y).numpy(), xs + yb)
    np.testing.assert_array_equal(oar.where(x > 0, x, y).numpy(), np.where(xs > 0, xs, yb))
    c = oar.to_tensor(rng.standard_normal(1).astype("float32") > 0)  # broadcast condition
    np.testing.assert_array_equal(oar.where(c, x, y).numpy(), np.where(c.numpy(), xs, yb))
    np.testing.assert_array_equal(oar.nn.functional.relu(x).numpy(), np.maximum(xs, 0))


def _bf16_round(a):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet), as float32."""
    u = a.astype("float32").view("uint32").astype("uint64")
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("uint32")
    r = np.where(np.isnan(a), ((u >> 16) | 0x40).astype("uint32"), r)
    return (r << 16).astype("uint32").view("float32")


@pytest.mark.parametrize("shape", [(0,), (15,), (33,), (784, 512)])
def test_bfloat16_binary_results_rounded_to_nearest_even(shape):
    rng = np.random.default_rng(7)
    a = _bf16_round(rng.standard_normal(shape).astype("float32") * 3)
    b = _bf16_round(rng.standard_normal(shape).astype("float32"))
    if a.size:
        a.reshape(-1)[0], b.reshape(-1)[-1] = np.nan, np.inf
    x, y = oar.to_tensor(a).astype("bfloat16"), oar.to_tensor(b).astype("bfloat16")
    for got, want in ((x + y, a + b), (x * y, a * b), (x - y, a - b)):
        np.testing.assert_array_equal(got.astype("float32").numpy(), _bf16_round(want))


# Shapes for the 16-bit bit-for-bit tests: empty, tails, several vectors, and two views.
SHAPE_VIEWS = [((0,), None), ((1,), None), ((15,), None), ((4099,), None), ((200003,), None),
               ((64, 33), "T"), ((8, 202), "stride")]


def _view(x, a, view):
    """The tensor x and its NumPy array a, transposed ("T"), every other column ("stride") or as is."""
    if view == "T":
        return x.transpose([1, 0]), a.T
    if view == "stride":
        return x[:, ::2], a[:, ::2]
    return x, a


def _f16_inputs(shape, rng):
    """float32 values that exercise float16 rounding: normals, half subnormals, ties between
    neighbouring halves, values that overflow to inf, float subnormals, +-0, inf and NaN."""
    a = (rng.standard_normal(shape) * 10).astype("float32")
    flat = a.reshape(-1)
    n = flat.size
    if n:
        k = rng.integers(0, 6, n)
        halves = rng.integers(0, 0x7C00, n).astype("uint16").view("float16").astype("float32")
        nxt = (halves.astype("float16").view("uint16") + 1).view("float16").astype("float32")
        flat[k == 1] = (rng.standard_normal(n) * 3e-6).astype("float32")[k == 1]  # half subnormals
        flat[k == 2] = ((halves + nxt) / 2)[k == 2]  # ties: to even
        flat[k == 3] = (rng.uniform(6.5e4, 7e4, n) * np.sign(rng.standard_normal(n))).astype("float32")[k == 3]
        flat[k == 4] = (rng.standard_normal(n) * 1e-39).astype("float32")[k == 4]  # float subnormals
        flat[: min(n, 5)] = [0.0, -0.0, np.inf, -np.inf, np.nan][: min(n, 5)]
    return a


@pytest.mark.parametrize("shape,view", SHAPE_VIEWS)
def test_float16_cast_and_pointwise_bit_for_bit(shape, view, threads):
    """float16's conversions (Note [float16 conversions in integers]) and the cast kernel's
    F16C path against NumPy bit for bit, contiguous and strided, and float16 add, multiply
    and relu, whose loops vectorize on those conversions."""
    rng = np.random.default_rng(11)
    a = _f16_inputs(shape, rng)
    x, a = _view(oar.to_tensor(a), a, view)
    with np.errstate(all="ignore"):
        want = a.astype("float16")
    got = x.astype("float16").numpy()
    assert got.dtype == np.float16 and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view("uint16")[~nan], want.view("uint16")[~nan])
    h = oar.to_tensor(want)
    back = h.astype("float32").numpy()
    np.testing.assert_array_equal(np.isnan(back), nan)
    np.testing.assert_array_equal(back[~nan].view("uint32"), want.astype("float32")[~nan].view("uint32"))
    b = want[::-1].copy() if want.ndim == 1 else want[::-1, ::-1].copy()
    hb = oar.to_tensor(b)
    with np.errstate(all="ignore"):
        for name, g, w in (("add", h + hb, want + b), ("multiply", h * hb, want * b),
                           ("relu", oar.nn.functional.relu(h), np.where(want > 0, want, np.float16(0)))):
            g = g.numpy()
            wn = np.isnan(w)
            np.testing.assert_array_equal(np.isnan(g), wn, err_msg=name)
            np.testing.assert_array_equal(g.view("uint16")[~wn], w.view("uint16")[~wn], err_msg=name)
        # exp: a SLEEF row, widened and rounded in registers (vec_math.h), within one step
        finite = np.isfinite(want) & (np.abs(want) < 10)
        g = oar.exp(h).numpy().astype("float64")[finite]
        w = np.exp(want[finite].astype("float64"))
        assert np.all(np.abs(g - w) <= np.spacing(w.astype("float16")).astype("float64")), "exp"


def _bf16_inputs(shape, rng):
    """float32 bit patterns that exercise bfloat16 rounding: normals, exact ties between
    neighbouring bfloat16 values (to even, both parities), values that round up to inf,
    float subnormals, NaNs with payloads in the high and low halves, +-0 and +-inf."""
    n = int(np.prod(shape))
    u = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    k = rng.integers(0, 6, n)
    u = np.where(k == 1, (u & 0xFFFF0000) | 0x8000, u)  # ties
    u = np.where(k == 2, (u & 0x80000000) | 0x7F7F8000 | (u & 0x7FFF), u)  # round to +-inf
    u = np.where(k == 3, u & 0x807FFFFF, u)  # subnormals
    u = np.where(k == 4, (u & 0x80000000) | 0x7F800000 | np.maximum(u & 0x7FFFFF, 1), u)  # NaNs
    u[: min(n, 7)] = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF][: min(n, 7)]
    return u.view("float32").reshape(shape)


@pytest.mark.parametrize("shape,view", SHAPE_VIEWS)
def test_bfloat16_cast_and_pointwise_bit_for_bit(shape, view, threads):
    """The cast kernel's float32 <-> bfloat16 paths and the 16-bit rows of the pointwise
    kernels (Note [float16 rows in blocks], elementwise.h's to_floats/from_floats) against
    round to nearest even on the float32 bits (the cast's NaN payloads included), contiguous
    and strided; exp (a SLEEF block) within one bfloat16 step of float64's."""
    rng = np.random.default_rng(13)
    a = _bf16_inputs(shape, rng)
    x, a = _view(oar.to_tensor(a), a, view)
    want = _bf16_round(a)
    h = x.astype("bfloat16")
    back = h.astype("float32").numpy()
    assert back.shape == want.shape
    np.testing.assert_array_equal(back.view("uint32"), want.view("uint32"))
    b = np.ascontiguousarray(want[::-1] if want.ndim == 1 else want[::-1, ::-1])
    hb = oar.to_tensor(b).astype("bfloat16")
    with np.errstate(all="ignore"):
        for name, g, w in (("add", h + hb, want + b), ("multiply", h * hb, want * b),
                           ("relu", oar.nn.functional.relu(h), np.where(want > 0, want, np.float32(0)))):
            g, w = g.astype("float32").numpy(), _bf16_round(w)
            nan = np.isnan(w)  # which NaN operand's payload an add keeps is the compiler's choice
            np.testing.assert_array_equal(np.isnan(g), nan, err_msg=name)
            np.testing.assert_array_equal(g[~nan].view("uint32"), w[~nan].view("uint32"), err_msg=name)
        finite = np.isfinite(want) & (np.abs(want) < 80)
        g = oar.exp(h).astype("float32").numpy()[finite]
        w = np.exp(want[finite].astype("float64"))
        step = np.spacing(_bf16_round(w.astype("float32"))).astype("float64") * 65536
        assert np.all(np.abs(g - w) <= np.maximum(step, 2.0 ** -133)), "exp"


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 4099, 200003])
def test_float16_sum_and_mean_in_blocks(n, threads):
    """float16 sum/mean convert through F16C and add in float (reduce.h): against the
    float64 sum of the same halves, rounded once to float16, whole and along an axis."""
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 4).astype("float16")
    ref = a.astype("float64")
    x = oar.to_tensor(a)
    for got, want in ((x.sum(), ref.sum()), (x.mean(), ref.mean() if n else np.nan)):
        assert got.dtype == oar.float16
        np.testing.assert_allclose(float(got), np.float16(want), rtol=1e-3, atol=1e-3)
    if n >= 4:
        m = (n // 4) * 4
        x2, r2 = oar.to_tensor(a[:m].reshape(4, -1)), ref[:m].reshape(4, -1)
        np.testing.assert_allclose(x2.sum(axis=1).astype("float64").numpy(),
                                   r2.sum(axis=1).astype("float16"), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bfloat16"])
def test_unary_rows_broadcast_and_unit_stride(dtype, threads):
    """unary_kernel's row forms: an input row of stride 0 (an expanded column: one value
    per row, written as a fill), of stride 1 inside a non-contiguous view (a column slice),
    and a general stride; copies (`contiguous`) and a math op (abs) against NumPy."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((7, 3001)) * 10
    if dtype == "int32":
        base = np.round(base)
    t = oar.to_tensor(base.astype("float32")).astype(dtype)
    ref = t.astype("float64").numpy()
    views = {
        "stride0": (t[:, 3:4].expand([7, 3001]), np.broadcast_to(ref[:, 3:4], (7, 3001))),
        "stride1": (t[:, 5:2000], ref[:, 5:2000]),
        "stride3": (t[:, ::3], ref[:, ::3]),
        "empty": (t[:0, 3:4].expand([0, 9]), np.zeros((0, 9))),
    }
    for name, (v, r) in views.items():
        assert not v.is_contiguous() or name == "empty"
        np.testing.assert_array_equal(v.contiguous().astype("float64").numpy(), r, err_msg=name)
        np.testing.assert_array_equal(v.abs().astype("float64").numpy(), np.abs(r), err_msg=name)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,other,view", [
    ((1024, 1024), (1024,), None),            # the row broadcast of bench/bench_ops.py's add_bcast
    ((7,), (5, 3, 7), None),                  # the row on the left: rows of the right operand
    ((33, 17), (17,), None),                  # odd rows and row length
    ((1, 17), (17,), None),                   # one row: fewer rows than threads
    ((3, 5, 7, 11), (5, 1, 11), None),        # rank 4: the row odometer carries through three dims
    ((0, 9), (9,), None),                     # 0-size
    ((64, 33, 17), (33, 1), "step"),          # a strided (every other column) left operand
    ((2, 40, 3, 700), (40, 1, 700), "T"),     # a transposed left operand
], ids=str)
def test_broadcast_rows_step_through_outer_dims(shape, other, view, threads):
    """binary_kernel / ternary_kernel over several outer dims: each chunk of rows finds its
    first row's index once, then steps row to row (elementwise.h's for_each_row); chunks
    start mid-dimension at 2 threads. Bit-exact against NumPy (float64 reference for mul
    rounded to float32 is the same value: one rounding)."""
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(other).astype("float32")
    before = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        if view == "step":
            base = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype("float32")
            x, a = oar.to_tensor(base)[..., ::2], base[..., ::2]
        elif view == "T":
            base = rng.standard_normal(shape[::-1]).astype("float32")
            x, a = oar.to_tensor(base).transpose([3, 2, 1, 0]), base.transpose(3, 2, 1, 0)
        else:
            x = oar.to_tensor(a)
        y = oar.to_tensor(b)
        np.testing.assert_array_equal((x + y).numpy(), a + b)
        np.testing.assert_array_equal((x * y).numpy(), (a.astype(np.float64) * b).astype(np.float32))
        np.testing.assert_array_equal(oar.where(x > y, x, y).numpy(), np.where(a > b, a, b))
    finally:
        oar.set_num_threads(before)


# Shapes that give each input operand of a ternary op a row step of 0 (broadcast along the
# row) or 1 (contiguous) independently: the row loops that elementwise.h's with_steps picks
# once per call (Note [Pointwise rows], docs/notes/pointwise_rows.md).
_ROW = (33, 17)
_STEP_SHAPES = {0: (33, 1), 1: (17,)}


@pytest.mark.parametrize("steps", [(c, a, b) for c in (0, 1) for a in (0, 1) for b in (0, 1)], ids=str)
def test_where_and_lerp_every_row_step(steps, threads):
    """where/lerp with each operand broadcast along the row or not (all 8 combinations; the
    output [33, 17] has odd rows and row length), and one operand also on the left of the
    broadcast (fewer dims), against float64 NumPy."""
    rng = np.random.default_rng(sum(s << i for i, s in enumerate(steps)))
    shapes = [_STEP_SHAPES[s] for s in steps]
    shapes[1] = _ROW if steps == (0, 0, 0) else shapes[1]  # some operand sets the row length
    c = rng.standard_normal(shapes[0]) > 0
    a = rng.standard_normal(shapes[1]).astype("float32")
    b = rng.standard_normal(shapes[2]).astype("float32")
    got = oar.where(oar.to_tensor(c), oar.to_tensor(a), oar.to_tensor(b)).numpy()
    np.testing.assert_array_equal(got, np.where(c, a, b))
    w = rng.uniform(0, 1, shapes[0]).astype("float32")
    got = oar.lerp(oar.to_tensor(a), oar.to_tensor(b), oar.to_tensor(w)).numpy()
    want = a.astype(np.float64) + w.astype(np.float64) * (b.astype(np.float64) - a)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "bfloat16"])
@pytest.mark.parametrize("case", ["bcast_right", "bcast_left", "col_left", "strided", "T", "empty"])
def test_binary_row_steps_and_dtypes(dtype, case, threads):
    """binary_kernel's row loops for each pair of steps (contiguous, broadcast on either side,
    a run-time stride, a transposed operand) and 0-size, for several dtypes, against NumPy."""
    rng = np.random.default_rng(3)

    def arr(shape):
        v = rng.standard_normal(shape) * 4
        return (v > 0) if dtype == "bool" else np.round(v) if dtype == "int32" else v

    big = arr((65, 1031))
    if case == "bcast_right":
        a, b, x, y = big, arr((1031,)), None, None
    elif case == "bcast_left":
        a, b, x, y = arr((1031,)), big, None, None
    elif case == "col_left":  # a [65, 1] column: step 0 on the left, contiguous on the right
        a, b, x, y = arr((65, 1)), big, None, None
    elif case == "strided":
        base = arr((65, 2062))
        a, b = base[:, ::2], arr((1031,))
        x = oar.to_tensor(base).astype(dtype)[:, ::2]
        y = None
    elif case == "T":
        base = arr((1031, 65))
        a, b = base.T, big
        x, y = oar.to_tensor(base).astype(dtype).transpose([1, 0]), None
    else:
        a, b, x, y = arr((0, 7)), arr((7,)), None, None
    x = oar.to_tensor(a).astype(dtype) if x is None else x
    y = oar.to_tensor(b).astype(dtype) if y is None else y
    # the reference from the values Oar holds (bfloat16 rounds the inputs)
    ra, rb = x.astype("float64").numpy(), y.astype("float64").numpy()
    if dtype == "bool":
        np.testing.assert_array_equal((x & y).numpy(), ra.astype(bool) & rb.astype(bool))
        return
    got = (x + y).astype("float64").numpy()
    want = (ra + rb).astype("float32" if dtype == "bfloat16" else dtype)
    if dtype == "bfloat16":
        want = _bf16_round(want)
    np.testing.assert_array_equal(got, want.astype("float64"))
    np.testing.assert_array_equal(oar.maximum(x, y).astype("float64").numpy(), np.maximum(ra, rb))


@pytest.mark.parametrize("shape,index", [
    ((9, 1031), (slice(None), slice(None, None, 2))),   # a strided destination row
    ((4, 5, 33), (slice(1, 3), slice(None), slice(1, None))),  # rows with an offset
    ((6, 0), (slice(None), slice(None))),                # 0-size
], ids=str)
def test_setitem_broadcast_into_strided_view(shape, index, threads):
    """Assignment of a broadcast row into a strided view (index_kernels' strided_assign on
    for_each_row, whose row loop reads the strides it captured)."""
    rng = np.random.default_rng(11)
    ref = rng.standard_normal(shape).astype("float32")
    t = oar.to_tensor(ref.copy())
    row = rng.standard_normal(ref[index].shape[-1:]).astype("float32")
    t[index] = oar.to_tensor(row)
    ref[index] = row
    np.testing.assert_array_equal(t.numpy(), ref)


_VIEWS = {
    "column slice": ((50, 1024), lambda t: t[:, 3:700]),
    "chunk of a 3-D tensor": ((4, 8, 256), lambda t: t[:, :, 128:]),
    "short rows": ((200, 80), lambda t: t[:, :40]),
    "column step": ((64, 300), lambda t: t[:, ::2]),
    "transpose": ((70, 90), lambda t: t.transpose([1, 0])),
    "broadcast row": ((1, 300), lambda t: t.expand([5, 300])),
    "broadcast column": ((40, 1), lambda t: t.expand([40, 100])),
    "one value everywhere": ((1, 1), lambda t: t.expand([37, 1500])),
}
_VECTOR_MAPS = {  # sleef_unary and float_map (activations, their gradients) in vec_math.h
    "sigmoid": oar.nn.functional.sigmoid, "exp": oar.exp, "tanh": oar.tanh, "sin": oar.sin,
    "log1p": lambda t: oar.log1p(t.abs()), "silu": oar.nn.functional.silu,
    "gelu": oar.nn.functional.gelu, "hardswish": oar.nn.functional.hardswish,
    "softplus": oar.nn.functional.softplus,
}


@pytest.mark.parametrize("view", list(_VIEWS), ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_vector_maps_read_views_in_place(view, dtype, threads):
    # Note [Vector maps on row views]: a view read row by row gives the bits of its contiguous
    # copy, for every row layout and the layouts that are copied
    shape, make = _VIEWS[view]
    before = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        base = oar.to_tensor(np.random.default_rng(3).standard_normal(shape) * 3, dtype)
        v = make(base)
        c = v.contiguous()
        for name, fn in _VECTOR_MAPS.items():
            got, want = fn(v).astype("float64").numpy(), fn(c).astype("float64").numpy()
            if name == "gelu" and dtype == "float64":  # erf or erfc per vector of 4 lanes:
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)  # a lane's vector
            else:  # mates decide, and they depend on where rows start
                np.testing.assert_array_equal(got, want, err_msg=name)
        if dtype in ("float32", "float64"):
            for leaf in (v, c):
                leaf.stop_gradient = False
            gv, = oar.grad([oar.nn.functional.silu(v).sum()], [v])
            gc, = oar.grad([oar.nn.functional.silu(c).sum()], [c])
            np.testing.assert_array_equal(gv.numpy(), gc.numpy())
    finally:
        oar.set_num_threads(before)


_GRAD_MAPS = {  # float_map's gradient kernels (activation_kernels.cc)
    "silu": oar.nn.functional.silu, "gelu": oar.nn.functional.gelu,
    "softplus": oar.nn.functional.softplus, "mish": oar.nn.functional.mish,
    "log_sigmoid": oar.nn.functional.log_sigmoid,
    "huber": lambda t: oar._C.ops._huber(t, 0.7),
}


@pytest.mark.parametrize("n", [5, 1024, 3001, 70001])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_vector_maps_read_one_value_gradients(n, dtype, threads):
    """Note [Vector maps on row views]: a gradient that is one value everywhere (x.sum()'s and
    x.mean()'s, stride 0 on every axis) is read from a short run of that value, the pieces cut
    to the run's length: the same bits as the dense gradient, on contiguous and row-view x."""
    before = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        base = oar.to_tensor(np.random.default_rng(n).standard_normal((3, n + 9)) * 3, dtype)
        for x in (base, base[:, 4:n + 4]):
            x = x.detach()
            x.stop_gradient = False
            value = oar.to_tensor(np.float64(-0.37), dtype)
            one = value.expand(x.shape)
            assert one.strides == [0, 0]
            dense = oar.full(x.shape, -0.37, dtype)
            for name, fn in _GRAD_MAPS.items():
                got, = oar.grad([fn(x)], [x], grad_outputs=[one])
                want, = oar.grad([fn(x)], [x], grad_outputs=[dense])
                np.testing.assert_array_equal(got.astype("float64").numpy(),
                                              want.astype("float64").numpy(), err_msg=name)
    finally:
        oar.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_mean_gradient_is_one_value(dtype):
    """mean's gradient scales the incoming value before it is broadcast: every element of a
    leaf's .grad is 1/n (1/reduced count with axes), and the kernels downstream read it."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 1500))
    x = oar.to_tensor(a, dtype, stop_gradient=False)
    x.mean().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(a.shape, 1 / a.size, dtype))
    assert x.grad.is_contiguous()  # a leaf's .grad is its own dense buffer, not the broadcast
    with oar.no_grad():
        x.grad[0, 0] = 5.0
    assert float(x.grad[1, 1]) == np.float64(1 / a.size).astype(dtype)
    x.clear_gradient()
    x.mean(axis=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(a.shape, 1 / 1500, dtype))
    x.clear_gradient()
    oar.nn.functional.silu(x).mean().backward()
    s = 1 / (1 + np.exp(-a))
    tol = 1e-12 if dtype == "float64" else 1e-3
    np.testing.assert_allclose(x.grad.astype("float64").numpy() * a.size, s * (1 + a * (1 - s)),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("src,dst", [("float32", "bfloat16"), ("bfloat16", "float32"),
                                     ("float32", "float16"), ("float16", "float32"),
                                     ("float64", "int32"), ("int64", "float32"),
                                     ("float32", "bool"), ("float32", "complex64")])
def test_cast_of_one_value_everywhere(src, dst):
    """cast of an input that is one value everywhere (stride 0 on every axis: the gradient of
    x.mean() cast back under AMP) converts the one value and fills: the bits of the cast of
    its dense copy, for 3000 elements and at 2 threads."""
    before = oar.get_num_threads()
    oar.set_num_threads(2)
    try:
        for value in (-2.7, 0.0, 3.3e38 if src == "float32" else 7.0, float("nan")):
            if src.startswith("int") and value != value:
                continue
            one = oar.to_tensor(np.float64(value), src).expand([3, 1000])
            got, want = one.astype(dst), one.contiguous().astype(dst)
            assert got.shape == [3, 1000] and got.is_contiguous()
            np.testing.assert_array_equal(got.astype("float64").numpy() if dst != "complex64" else got.numpy(),
                                          want.astype("float64").numpy() if dst != "complex64" else want.numpy())
    finally:
        oar.set_num_threads(before)
