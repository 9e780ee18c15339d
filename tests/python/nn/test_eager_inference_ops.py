"""Eager calls no gradient flows from run the predictor's fused inference ops (Note [Eager
inference ops]): F.linear as fused_linear, a Transformer layer's feed-forward input as
fused_linear_activation. Their values against float64 NumPy and the unfused ops, and the
cases that keep the unfused ops (a gradient to feed, hooks, other activations, autocast,
to_static). F.conv2d's side: tests/python/ops/test_conv_algos.py."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F


def ops_run(fn):
    with oar.profiler.Profiler(on_trace_ready=lambda p: None) as prof:
        out = fn()
    return out, {n for n, _, _ in prof.op_stats()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xshape", [(5, 7), (2, 3, 7), (0, 7), (7,)], ids=str)
def test_linear_without_grad_is_fused_linear(xshape, dtype):
    rng = np.random.default_rng(len(xshape))
    x, w, b = rng.standard_normal(xshape), rng.standard_normal((7, 4)), rng.standard_normal(4)
    ref = x @ w + b
    xt, wt, bt = (oar.to_tensor(a.astype(dtype)) for a in (x, w, b))
    wt.stop_gradient = bt.stop_gradient = False  # under no_grad nothing flows all the same
    with oar.no_grad():
        y, ran = ops_run(lambda: F.linear(xt, wt, bt))
    assert "fused_linear" in ran and "matmul" not in ran and "add" not in ran, ran
    assert y.shape == list(ref.shape) and y.dtype == xt.dtype
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y.numpy(), ref, rtol=tol, atol=tol)
    y2, ran = ops_run(lambda: F.linear(xt, wt, bt))  # a gradient to feed: matmul + add
    assert "matmul" in ran and "fused_linear" not in ran and not y2.stop_gradient, ran
    np.testing.assert_allclose(y2.numpy(), ref, rtol=tol, atol=tol)


def test_linear_keeps_the_unfused_ops_where_the_fused_one_does_not_apply():
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((3, 5)).astype("float32"))
    w = oar.to_tensor(rng.standard_normal((5, 2)).astype("float32"))
    with oar.no_grad():
        for bias in (None, oar.to_tensor(np.ones((3, 2), "float32"))):  # no bias; a bias that is not [out]
            y, ran = ops_run(lambda: F.linear(x, w, bias))
            assert "fused_linear" not in ran and "matmul" in ran, ran
        y, ran = ops_run(lambda: F.linear(x.astype("bfloat16"), w.astype("bfloat16"),
                                          oar.ones([2], dtype="bfloat16")))
        assert "fused_linear" not in ran and y.dtype == oar.bfloat16, ran
        with oar.amp.auto_cast(dtype="bfloat16"):
            _, ran = ops_run(lambda: F.linear(x, w, oar.ones([2])))
        assert "fused_linear" not in ran, ran
        f = oar.jit.to_static(lambda t: F.linear(t, w, oar.ones([2])))
        f(x)
        assert "fused_linear" not in str(f.main_program)
    with pytest.raises(ValueError, match="linear: x's last dimension must equal weight's first"):
        with oar.no_grad():
            F.linear(x, oar.ones([4, 2]), oar.ones([2]))


@pytest.mark.parametrize("activation", ["relu", "gelu", "sigmoid"])
@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_transformer_feed_forward_without_grad(kind, activation):
    """In eval under no_grad the feed-forward block's first linear and its relu or gelu run
    as one fused_linear_activation, with the values of the unfused layer; another
    activation, or a forward hook on linear1, keeps the unfused ops (the hook runs)."""
    oar.seed(3)
    cls = oar.nn.TransformerEncoderLayer if kind == "encoder" else oar.nn.TransformerDecoderLayer
    layer = cls(16, 2, 32, dropout=0.0, activation=activation)
    layer.eval()
    rng = np.random.default_rng(1)
    x = oar.to_tensor(rng.standard_normal((2, 5, 16)).astype("float32"))
    args = (x,) if kind == "encoder" else (x, oar.to_tensor(rng.standard_normal((2, 3, 16)).astype("float32")))
    want, ran = ops_run(lambda: layer(*args))  # the parameters want gradients: unfused
    assert "fused_linear_activation" not in ran, ran
    with oar.no_grad():
        got, ran = ops_run(lambda: layer(*args))
        assert ("fused_linear_activation" in ran) == (activation != "sigmoid"), ran
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        seen = []
        handle = layer.linear1.register_forward_post_hook(lambda m, i, o: seen.append(o.shape))
        hooked, ran = ops_run(lambda: layer(*args))
        handle.remove()
        assert seen and "fused_linear_activation" not in ran, ran
        np.testing.assert_allclose(hooked.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_no_grad_flows_predicate():
    """The one predicate behind every eager fused op (one C++ call for the tensor checks):
    None entries skipped, the dtypes asked for, no gradient to feed, no autocast, no
    distributed tensor, nothing that is not a Tensor."""
    import oar.distributed as dist
    from oar.nn._inference_ops import F32_F64, no_grad_flows
    f32, f64 = oar.ones([3, 5]), oar.ones([3, 5], dtype="float64")
    wants = oar.ones([3, 5])
    wants.stop_gradient = False
    assert no_grad_flows((f32, None)) and not no_grad_flows((f64,)) and no_grad_flows((f32, f64), F32_F64)
    assert not no_grad_flows((f32.astype("bfloat16"),), F32_F64) and not no_grad_flows((f32, np.ones(3)))
    assert not no_grad_flows((f32, wants))  # a gradient to feed
    with oar.no_grad():
        assert no_grad_flows((f32, wants))
        with oar.amp.auto_cast(dtype="bfloat16"):
            assert not no_grad_flows((f32,))
        mesh = dist.ProcessMesh([0], dim_names=["x"])
        d = dist.shard_tensor(oar.ones([3, 5]), mesh, [dist.Replicate()])
        assert not no_grad_flows((d,)) and not no_grad_flows((f32, d))
        _, ran = ops_run(lambda: F.linear(d, oar.ones([5, 2]), oar.ones([2])))
        assert "fused_linear" not in ran, ran
