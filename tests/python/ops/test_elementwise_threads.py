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
