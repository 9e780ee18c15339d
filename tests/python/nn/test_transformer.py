"""Transformer layers: outputs against a float64 NumPy re-implementation of Paddle's
formulas using the layers' own weights, fused vs. reference paths, incremental
decoding caches, Paddle's parameter names, gradients, bad arguments."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.nn.layer_transformer import LayerNorm  # oar.nn.LayerNorm, or its stand-in
from op_test_utils import check_grad, OpCase, normal


def W(p):
    return p.numpy().astype(np.float64)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mask(m):
    if m is None:
        return 0.0
    m = np.asarray(m)
    return (m.astype(np.float64) - 1.0) * 1e9 if m.dtype == np.bool_ else m


def np_mha(mha, q, k, v, mask=None):
    h, d = mha.num_heads, mha.head_dim

    def proj(lin, x):
        y = x @ W(lin.weight) + W(lin.bias)
        return y.reshape(y.shape[0], y.shape[1], h, d).transpose(0, 2, 1, 3)
    Q, K, V = proj(mha.q_proj, q), proj(mha.k_proj, k), proj(mha.v_proj, v)
    s = (Q * d ** -0.5) @ K.transpose(0, 1, 3, 2) + np_mask(mask)
    w = np_softmax(s)
    o = (w @ V).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], h * d)
    return o @ W(mha.out_proj.weight) + W(mha.out_proj.bias), w


def np_ln(norm, x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * W(norm.weight) + W(norm.bias)


def np_ffn(layer, x):
    return np.maximum(x @ W(layer.linear1.weight) + W(layer.linear1.bias), 0) @ \
        W(layer.linear2.weight) + W(layer.linear2.bias)


def np_encoder_layer(layer, x, mask=None):
    nb = layer.normalize_before
    r = x
    y = np_ln(layer.norm1, x) if nb else x
    y = r + np_mha(layer.self_attn, y, y, y, mask)[0]
    if not nb:
        y = np_ln(layer.norm1, y)
    r = y
    z = np_ln(layer.norm2, y) if nb else y
    z = r + np_ffn(layer, z)
    return z if nb else np_ln(layer.norm2, z)


def np_decoder_layer(layer, x, mem, tmask=None, mmask=None):
    nb = layer.normalize_before
    r = x
    y = np_ln(layer.norm1, x) if nb else x
    y = r + np_mha(layer.self_attn, y, y, y, tmask)[0]
    if not nb:
        y = np_ln(layer.norm1, y)
    r = y
    z = np_ln(layer.norm2, y) if nb else y
    z = r + np_mha(layer.cross_attn, z, mem, mem, mmask)[0]
    if not nb:
        z = np_ln(layer.norm2, z)
    r = z
    u = np_ln(layer.norm3, z) if nb else z
    u = r + np_ffn(layer, u)
    return u if nb else np_ln(layer.norm3, u)


def t64(a, grad=False):
    return oar.to_tensor(np.asarray(a, dtype=np.float64), stop_gradient=not grad)


@pytest.fixture(autouse=True)
def _float64():
    oar.set_default_dtype("float64")
    oar.seed(1)
    yield
    oar.set_default_dtype("float32")


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_mha_vs_numpy(need_weights, mask_kind):
    mha = nn.MultiHeadAttention(8, 2, kdim=6, vdim=5, need_weights=need_weights)
    q, k, v = RNG.standard_normal((2, 3, 8)), RNG.standard_normal((2, 4, 6)), \
        RNG.standard_normal((2, 4, 5))
    mask = None
    if mask_kind == "bool":
        mask = RNG.random((2, 1, 3, 4)) < 0.7
        mask[..., 0] = True
    elif mask_kind == "float":
        mask = RNG.standard_normal((3, 4))
    ref, w = np_mha(mha, q, k, v, mask)
    out = mha(t64(q), t64(k), t64(v), None if mask is None else oar.to_tensor(mask))
    if need_weights:
        out, weights = out
        np.testing.assert_allclose(weights.numpy(), w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_mha_fused_and_reference_paths_agree_with_grads():
    mha = nn.MultiHeadAttention(8, 4)
    x = RNG.standard_normal((2, 5, 8))
    mask = RNG.random((5, 5)) < 0.8
    grads = []
    for need in (False, True):
        mha.need_weights = need
        xt = t64(x, grad=True)
        out = mha(xt, attn_mask=oar.to_tensor(mask))
        out = out[0] if need else out
        (out * out).sum().backward()
        grads.append((out.numpy(), xt.grad.numpy(), mha.q_proj.weight.grad.numpy().copy()))
        mha.clear_gradients()
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_mha_gradient_finite_differences():
    mha = nn.MultiHeadAttention(4, 2)
    case = OpCase("mha", lambda q, k: mha(q, k, k), None,
                  inputs=[normal((1, 3, 4)), normal((1, 2, 4))], grad_tol=(1e-6, 1e-5))
    check_grad(case)


def test_mha_incremental_cache_matches_causal():
    mha = nn.MultiHeadAttention(8, 2)
    x = RNG.standard_normal((2, 4, 8))
    causal = np.tril(np.ones((4, 4), bool))
    full = mha(t64(x), attn_mask=oar.to_tensor(causal)).numpy()
    cache = mha.gen_cache(t64(x))
    assert cache.k.shape == [2, 2, 0, 4]
    steps = []
    for i in range(4):
        xi = t64(x[:, i:i + 1])
        out, cache = mha(xi, xi, xi, None, cache)
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-10, atol=1e-12)
    # static cache: precomputed keys/values of a memory
    mem = t64(RNG.standard_normal((2, 3, 8)))
    sc = mha.gen_cache(mem, mem, type=nn.MultiHeadAttention.StaticCache)
    out, sc2 = mha(t64(x), mem, mem, None, sc)
    np.testing.assert_allclose(out.numpy(), mha(t64(x), mem, mem).numpy(), rtol=1e-10)


@pytest.mark.parametrize("normalize_before", [False, True])
def test_encoder_layer_and_stack_vs_numpy(normalize_before):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, normalize_before=normalize_before)
    x = RNG.standard_normal((2, 5, 8))
    mask = RNG.standard_normal((2, 2, 5, 5))
    np.testing.assert_allclose(layer(t64(x), oar.to_tensor(mask)).numpy(),
                               np_encoder_layer(layer, x, mask), rtol=1e-9, atol=1e-10)
    enc = nn.TransformerEncoder(layer, 3, norm=LayerNorm(8))
    assert len(enc.layers) == 3 and enc.layers[0] is layer
    assert enc.layers[1].self_attn.q_proj.weight is not layer.self_attn.q_proj.weight
    assert enc.layers[2].normalize_before == normalize_before
    ref = x
    for l in enc.layers:
        ref = np_encoder_layer(l, ref)
    ref = np_ln(enc.norm, ref)
    np.testing.assert_allclose(enc(t64(x)).numpy(), ref, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("normalize_before", [False, True])
def test_decoder_layer_and_transformer_vs_numpy(normalize_before):
    model = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, normalize_before=normalize_before,
                           activation="relu")
    src, tgt = RNG.standard_normal((2, 5, 8)), RNG.standard_normal((2, 3, 8))
    tmask = model.generate_square_subsequent_mask(3)
    assert tmask.shape == [3, 3] and np.isneginf(tmask.numpy()[0, 1])
    mem = src
    for l in model.encoder.layers:
        mem = np_encoder_layer(l, mem)
    mem = np_ln(model.encoder.norm, mem)
    out = tgt
    tm = tmask.numpy().astype(np.float64)
    for l in model.decoder.layers:
        out = np_decoder_layer(l, out, mem, tm)
    out = np_ln(model.decoder.norm, out)
    got = model(t64(src), t64(tgt), tgt_mask=tmask.astype("float64"))
    np.testing.assert_allclose(got.numpy(), out, rtol=1e-9, atol=1e-10)


def test_decoder_cache_matches_full():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 2)
    mem = t64(RNG.standard_normal((1, 4, 8)))
    tgt = RNG.standard_normal((1, 3, 8))
    causal = np.tril(np.ones((3, 3), bool))
    full = dec(t64(tgt), mem, tgt_mask=oar.to_tensor(causal)).numpy()
    cache = dec.gen_cache(mem)
    outs = []
    for i in range(3):
        o, cache = dec(t64(tgt[:, i:i + 1]), mem, cache=cache)
        outs.append(o.numpy())
    np.testing.assert_allclose(np.concatenate(outs, 1), full, rtol=1e-9, atol=1e-10)


def test_paddle_parameter_names_and_shapes():
    model = nn.Transformer(16, 4, 1, 1, 32)
    sd = model.state_dict()
    for key, shape in [("encoder.layers.0.self_attn.q_proj.weight", [16, 16]),
                       ("encoder.layers.0.linear1.weight", [16, 32]),
                       ("encoder.layers.0.linear2.bias", [16]),
                       ("encoder.layers.0.norm2.weight", [16]),
                       ("encoder.norm.bias", [16]),
                       ("decoder.layers.0.cross_attn.out_proj.weight", [16, 16]),
                       ("decoder.layers.0.norm3.bias", [16]),
                       ("decoder.norm.weight", [16])]:
        assert key in sd and list(sd[key].shape) == shape, key
    assert len(sd) == 16 + 2 + 26 + 2
    mha = nn.MultiHeadAttention(6, 3, kdim=4, vdim=2)
    assert mha.k_proj.weight.shape == [4, 6] and mha.v_proj.weight.shape == [2, 6]


def test_dropout_and_training_modes():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = t64(RNG.standard_normal((2, 5, 8)))
    layer.eval()
    a, b = layer(x).numpy(), layer(x).numpy()
    np.testing.assert_array_equal(a, b)
    layer.train()
    assert not np.allclose(layer(x).numpy(), a)


def test_bad_arguments():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="positive"):
        nn.TransformerEncoderLayer(0, 2, 8)
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, 8, activation="nope")
    with pytest.raises(ValueError, match="3-D"):
        nn.MultiHeadAttention(8, 2)(t64(np.zeros((5, 8))))
    with pytest.raises(ValueError):
        nn.MultiHeadAttention(8, 2)(t64(np.zeros((2, 5, 8))), attn_mask=t64(np.zeros((3, 3))))
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 8), 0)
