"""bfloat16 rows of the vector maps (sleef_unary, float_rows) computed in float registers and
rounded by vcvtneps2bf16 where the core has AVX512-BF16, by integer rounding in float blocks
elsewhere (vec_math.h, vec::store_ne). Either way each value must be the float32 op's result
rounded once to bfloat16, bit for bit: the tests run every one of the 65536 bfloat16 bit
patterns through each op, forward and backward, contiguous and strided, at 1 and 2 threads,
against the float32 op followed by a cast. vcvtneps2bf16 flushes subnormal floats to zero, so
the outputs that are bfloat16 subnormals (exp far below zero, gelu of tiny inputs) check the
fallback that keeps them."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F

FORWARD = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate=True),
    "exp": oar.exp,
    "log": oar.log,
    "sqrt": oar.sqrt,
    "rsqrt": oar.rsqrt,
    "tanh": oar.tanh,
    "sigmoid": F.sigmoid,
    "silu": F.silu,
    "sin": oar.sin,
    "softplus": F.softplus,
    "elu": F.elu,
    "mish": F.mish,
    "log_sigmoid": F.log_sigmoid,
    "softsign": F.softsign,
    "pow": lambda x: oar.pow(x, 2.5),
}
# gradients computed from x (tanh's and sigmoid's come from the rounded output, so their
# bfloat16 and float32 forms differ by design)
BACKWARD = ("gelu", "gelu_tanh", "silu", "softplus", "elu", "mish")


def _every_pattern(layout):
    bits = np.arange(-32768, 32768, dtype=np.int16)
    if layout == "strided":
        return oar.to_tensor(np.stack([bits, bits], 1).reshape(256, 512)).view("bfloat16")[:, ::2]
    if layout == "tail":  # rows of 37: each row's last 5 values past whole vectors
        return oar.to_tensor(bits[: 37 * 1771].reshape(1771, 37)).view("bfloat16")
    return oar.to_tensor(bits.reshape(256, 256)).view("bfloat16")


def _assert_bits(got, want, what):
    g = got.contiguous().view("int16").numpy()
    w = want.contiguous().view("int16").numpy()
    nan = np.isnan(want.astype("float32").numpy())
    np.testing.assert_array_equal(np.isnan(got.astype("float32").numpy()), nan, err_msg=what)
    bad = (g != w) & ~nan
    assert not bad.any(), f"{what}: {bad.sum()} values differ, first bits {g[bad][:4]} want {w[bad][:4]}"


@pytest.mark.parametrize("layout", ["contiguous", "strided", "tail"])
@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_is_float_rounded_once(name, layout, threads):
    x = _every_pattern(layout)
    op = FORWARD[name]
    _assert_bits(op(x), op(x.astype("float32")).astype("bfloat16"), name)


@pytest.mark.parametrize("name", BACKWARD)
@pytest.mark.parametrize("layout", ["contiguous", "tail"])
def test_backward_is_float_rounded_once(name, layout, threads):
    x = _every_pattern(layout)
    g_bits = np.random.default_rng(3).integers(-16000, 16000, list(x.shape)).astype(np.int16)  # finite g
    g = oar.to_tensor(g_bits).view("bfloat16")
    xb = x.detach()
    xb.stop_gradient = False
    FORWARD[name](xb).backward(g)
    xf = x.astype("float32").detach()
    xf.stop_gradient = False
    FORWARD[name](xf).backward(g.astype("float32"))
    _assert_bits(xb.grad, xf.grad.astype("bfloat16"), name + " grad")


def test_subnormal_results_are_kept(threads):
    """exp(-90) = 8.2e-40 and gelu(1e-39) = 5e-40 are bfloat16 subnormals: rounded as the cast
    rounds them (fewer significant bits), not flushed to 0, in whole vectors and in tails."""
    for op, v in ((oar.exp, [-90.0, -92.0]), (F.gelu, [1e-39, -1e-39])):
        x = oar.to_tensor(np.array(v * 20, np.float32)).astype("bfloat16")
        got = op(x)
        assert (got.astype("float32").numpy() != 0).all()
        _assert_bits(got, op(x.astype("float32")).astype("bfloat16"), "subnormal")
