"""paddle.nn.quant's weight-only int8 (weight_quantize, weight_dequantize, weight_only_linear)
against float64 NumPy: the quantization rule (per channel and per group of 64 / 128 rows), the
round trip, the linear for float32 / bfloat16 / float16 inputs with and without bias and a
batch, sizes that reach the bf16 GEMM's AMX kernel, the gradient to x, and bad inputs."""
import numpy as np
import oar
import pytest
from oar.nn.quant import weight_dequantize, weight_only_linear, weight_quantize


def _ref_quantize(w, group):
    """float64 reference: q [out, in] int8, scale float32 [out] or [in / group, out]."""
    rows, cols = w.shape
    g = w.reshape(rows // group, group, cols) if group > 0 else w[None]
    absmax = np.abs(g).max(axis=1)
    scale = (absmax / 127.0).astype(np.float32)
    safe = np.where(absmax > 0, scale, 1.0).astype(np.float32)
    # round half away from zero, as Paddle's kernel; the division in float32 as the op does
    ratio = (g.astype(np.float32) / safe[:, None, :]).astype(np.float64)
    q = np.clip(np.sign(ratio) * np.floor(np.abs(ratio) + 0.5), -127, 127).reshape(rows, cols)
    return q.T.astype(np.int8), (scale if group > 0 else scale[0])


@pytest.mark.parametrize("group", [-1, 64, 128])
@pytest.mark.parametrize("shape", [(128, 7), (256, 33), (128, 1)])
def test_quantize_matches_reference(group, shape):
    rng = np.random.default_rng(shape[0] + shape[1])
    w = rng.standard_normal(shape).astype(np.float32)
    w[:, 0] = 0.0  # an all-zero channel: scale 0, codes 0
    q, s = weight_quantize(oar.to_tensor(w), group_size=group)
    q_ref, s_ref = _ref_quantize(w, group)
    assert q.dtype == oar.int8 and s.dtype == oar.float32
    assert list(q.shape) == [shape[1], shape[0]]
    np.testing.assert_array_equal(s.numpy(), s_ref)
    np.testing.assert_array_equal(q.numpy(), q_ref)
    back = weight_dequantize(q, s, out_dtype="float32", group_size=group).numpy()
    # the round trip is within half a step of each channel (group)
    step = np.repeat(s_ref, group, axis=0) if group > 0 else np.broadcast_to(s_ref, w.shape)
    assert np.all(np.abs(back - w) <= step / 2 + 1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_quantize_half_inputs(dtype):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    t = oar.to_tensor(w).astype(dtype)
    q, s = weight_quantize(t)
    q_ref, s_ref = _ref_quantize(t.astype("float32").numpy(), -1)
    np.testing.assert_array_equal(q.numpy(), q_ref)
    np.testing.assert_allclose(s.numpy(), s_ref, rtol=0)


def _linear_ref(x, q, s, bias, group):
    w = q.T.astype(np.float64)  # [in, out]
    if group > 0:
        w = (w.reshape(-1, group, w.shape[1]) * s[:, None, :].astype(np.float64)).reshape(w.shape)
    else:
        w = w * s.astype(np.float64)
    out = x.astype(np.float64) @ w
    return out if bias is None else out + bias


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("bfloat16", 2e-2), ("float16", 2e-3)])
@pytest.mark.parametrize("group", [-1, 64])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_against_float64(dtype, tol, group, with_bias):
    rng = np.random.default_rng(7)
    k, n = 128, 40
    x = rng.standard_normal((3, 5, k)).astype(np.float32)
    q, s = weight_quantize(oar.to_tensor(rng.standard_normal((k, n)).astype(np.float32)), group_size=group)
    bias = rng.standard_normal(n).astype(np.float32) if with_bias else None
    xt = oar.to_tensor(x).astype(dtype)
    bt = None if bias is None else oar.to_tensor(bias).astype(dtype)
    out = weight_only_linear(xt, q, bias=bt, weight_scale=s, group_size=group)
    assert out.dtype == xt.dtype and list(out.shape) == [3, 5, n]
    # the reference sees the inputs as rounded to dtype
    xr = xt.astype("float32").numpy()
    br = None if bt is None else bt.astype("float32").numpy()
    ref = _linear_ref(xr, q.numpy(), s.numpy(), br, group)
    mag = np.abs(xr).astype(np.float64) @ np.abs(_linear_ref(np.eye(k), q.numpy(), s.numpy(), None, group))
    err = np.abs(out.astype("float32").numpy() - ref)
    assert np.all(err <= tol * (np.abs(ref) + mag + 1)), np.max(err)


def test_linear_large_bf16_and_grad():
    """Sizes that take the bf16 GEMM's AMX kernel on an AMX CPU (M, N >= 256, >= 2^28 multiply-
    adds); the gradient reaches x (x @ w's backward through the dequantized weight)."""
    rng = np.random.default_rng(3)
    m, k, n = 512, 1024, 520
    q, s = weight_quantize(oar.to_tensor(rng.standard_normal((k, n)).astype(np.float32)))
    x = oar.to_tensor(rng.standard_normal((m, k)).astype(np.float32)).astype("bfloat16")
    x.stop_gradient = False
    out = weight_only_linear(x, q, weight_scale=s)
    xr = x.astype("float32").numpy()
    w = q.numpy().T.astype(np.float64) * s.numpy()
    wb = oar.to_tensor(w.astype(np.float32)).astype("bfloat16").astype("float32").numpy().astype(np.float64)
    ref = xr @ wb
    bound = 2.0**-8 * np.abs(ref) + 2.0**-12 * (np.abs(xr) @ np.abs(wb))
    assert np.all(np.abs(out.astype("float32").numpy() - ref) <= bound)
    g = rng.standard_normal((m, n)).astype(np.float32)
    out.backward(oar.to_tensor(g).astype("bfloat16"))
    gr = oar.to_tensor(g).astype("bfloat16").astype("float32").numpy() @ wb.T
    gx = x.grad.astype("float32").numpy()
    assert np.all(np.abs(gx - gr) <= 2.0**-7 * np.abs(gr) + 2.0**-11 * (np.abs(g) @ np.abs(wb.T)))


def test_bad_inputs():
    x = oar.randn([2, 64])
    w = oar.randn([64, 16])
    q, s = weight_quantize(w)
    with pytest.raises(NotImplementedError, match="weight_only_int4"):
        weight_quantize(w, algo="weight_only_int4")
    with pytest.raises(ValueError, match="algo"):
        weight_quantize(w, algo="int3")
    with pytest.raises(ValueError, match="group_size"):
        weight_quantize(w, group_size=32)
    with pytest.raises(ValueError, match="multiple of group_size 128"):
        weight_quantize(oar.randn([96, 4]), group_size=128)
    with pytest.raises(ValueError, match="2-D"):
        weight_quantize(oar.randn([4, 4, 4]))
    with pytest.raises(TypeError, match="int32"):
        weight_quantize(oar.ones([4, 4], dtype="int32"))
    with pytest.raises(TypeError, match="must be int8"):
        weight_only_linear(x, w, weight_scale=s)
    with pytest.raises(ValueError, match="input size"):
        weight_only_linear(oar.randn([2, 63]), q, weight_scale=s)
    with pytest.raises(ValueError, match=r"weight_scale must have shape \[16\]"):
        weight_only_linear(x, q, weight_scale=oar.ones([15]))
    with pytest.raises(ValueError, match="weight_scale is required"):
        weight_only_linear(x, q)
    with pytest.raises(ValueError, match=r"bias must have shape \[16\]"):
        weight_only_linear(x, q, bias=oar.ones([4]), weight_scale=s)
    with pytest.raises(NotImplementedError, match="int4"):
        weight_only_linear(x, q, weight_scale=s, weight_dtype="int4")
    with pytest.raises(TypeError, match="x must be"):
        weight_only_linear(x.astype("int32"), q, weight_scale=s)
    with pytest.raises(TypeError, match="out_dtype"):
        weight_dequantize(q, s, out_dtype="int32")
    with pytest.raises(TypeError, match="Tensor"):
        weight_only_linear(np.ones((2, 64)), q, weight_scale=s)
