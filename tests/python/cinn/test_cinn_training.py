"""A Transformer block trained 20 steps under to_static(backend='CINN') equals to_static
without it and eager (issue 15): the forward and backward programs go through the fusion
compiler (layer_norm, softmax, gelu decomposed and fused where the forward holds them,
the backward's primitives fused), Adam updates the parameters in between."""

import numpy as np

import oar
from oar import _C


D, HEADS, FF, L, B = 32, 4, 64, 12, 3


def block(seed):
    oar.seed(seed)
    layer = oar.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, activation="gelu")
    head = oar.nn.Linear(D, 1)
    return oar.nn.Sequential(layer, head)


def train(mode, steps=20):
    net = block(0)
    fn = net if mode == "eager" else oar.jit.to_static(net, backend="CINN" if mode == "cinn" else None)
    opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = oar.to_tensor(rng.standard_normal((B, L, D)).astype("float32"))
        t = oar.to_tensor(rng.standard_normal((B, L, 1)).astype("float32"))
        loss = ((fn(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return np.array(losses), [p.numpy().copy() for p in net.parameters()], fn


def test_transformer_block_trains_the_same_with_cinn():
    eager_l, eager_p, _ = train("eager")
    static_l, static_p, _ = train("static")
    cinn_l, cinn_p, fn = train("cinn")
    s = _C.cinn.cache_stats()
    assert s["kernels"] >= 2 and s["fallbacks"] == 0, s
    cp = fn.concrete_programs[-1] if hasattr(fn, "concrete_programs") else fn.forward.concrete_programs[-1]
    assert "kernel.compiled_kernel" in str(cp.executed_program)
    np.testing.assert_allclose(cinn_l, static_l, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cinn_l, eager_l, rtol=1e-5, atol=1e-6)
    init = [p.numpy() for p in block(0).parameters()]
    for (name, _), a, b, c, p0 in zip(block(0).named_parameters(), cinn_p, static_p, eager_p, init):
        if name.endswith("k_proj.bias"):
            # Its gradient is exactly zero (softmax ignores a constant per query): every
            # form computes rounding noise there, which Adam turns into steps of up to lr
            # in random directions. Only bounded: 20 steps of at most lr = 1e-3.
            for q in (a, b, c):
                assert np.abs(q - p0).max() <= 20 * 1e-3 + 1e-6, name
            continue
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5, err_msg=name)
    assert cinn_l[-1] < cinn_l[0]  # it learns
