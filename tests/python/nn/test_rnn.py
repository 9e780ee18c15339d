"""Recurrent layers against a float64 NumPy implementation of Paddle's recurrences
(gate orders, multi-layer, bidirectional, time_major, initial states,
sequence_length), finite-difference gradients, parameter names, bad arguments."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from op_test_utils import OpCase, check_grad, normal

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _float64():
    oar.set_default_dtype("float64")
    oar.seed(2)
    yield
    oar.set_default_dtype("float32")


def P(t):
    return t.numpy().astype(np.float64)


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(cell, x, state):
    xp = x @ P(cell.weight_ih).T + P(cell.bias_ih)
    if isinstance(cell, nn.LSTMCell):
        h, c = state
        g = xp + h @ P(cell.weight_hh).T + P(cell.bias_hh)
        i, f, gg, o = np.split(g, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(gg)
        h = sig(o) * np.tanh(c)
        return h, (h, c)
    hp = state @ P(cell.weight_hh).T + P(cell.bias_hh)
    if isinstance(cell, nn.GRUCell):
        xr, xz, xc = np.split(xp, 3, -1)
        hr, hz, hc = np.split(hp, 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        c = np.tanh(xc + r * hc)
        h = (state - c) * z + c
        return h, h
    h = np.tanh(xp + hp) if cell.activation == "tanh" else np.maximum(xp + hp, 0)
    return h, h


def np_run(cell, x, state, reverse, lens):
    """x [B, T, I] -> outputs [B, T, H], final state (masked beyond lens)."""
    T = x.shape[1]
    outs = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        o, ns = np_cell(cell, x[:, t], state)
        m = (t < lens)[:, None].astype(np.float64)
        if isinstance(ns, tuple):
            ns = tuple(n * m + s * (1 - m) for n, s in zip(ns, state))
        else:
            ns = ns * m + state * (1 - m)
        state = ns
        outs[t] = o * m
    return np.stack(outs, 1), state


def np_rnnbase(layer, x, h0, lens):
    """Reference of SimpleRNN/LSTM/GRU; h0 per Paddle: [L*D, B, H] (tuple for LSTM)."""
    lstm = isinstance(layer, nn.LSTM)
    D = layer.num_directions
    finals = []
    for k, sub in enumerate(layer):
        cells = [sub.cell] if D == 1 else [sub.cell_fw, sub.cell_bw]
        outs = []
        for d, c in enumerate(cells):
            idx = k * D + d
            st = (h0[0][idx], h0[1][idx]) if lstm else h0[idx]
            o, s = np_run(c, x, st, d == 1, lens)
            outs.append(o)
            finals.append(s)
        x = np.concatenate(outs, -1)
    if lstm:
        return x, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))
    return x, np.stack(finals)


CASES = [  # (class, kwargs)
    (nn.SimpleRNN, {}),
    (nn.SimpleRNN, {"activation": "relu", "num_layers": 2}),
    (nn.LSTM, {}),
    (nn.LSTM, {"num_layers": 2, "direction": "bidirect"}),
    (nn.GRU, {}),
    (nn.GRU, {"num_layers": 2, "direction": "bidirectional"}),
]


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("with_lens", [False, True])
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("cls,kw", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_layers_vs_numpy(cls, kw, with_h0, with_lens, time_major):
    B, T, I, H = 3, 5, 4, 6
    layer = cls(I, H, time_major=time_major, **kw)
    n = layer.num_layers * layer.num_directions
    x = RNG.standard_normal((B, T, I))
    lens = np.array([5, 2, 4]) if with_lens else np.full(B, T)
    if with_h0:
        h0 = RNG.standard_normal((n, B, H))
        c0 = RNG.standard_normal((n, B, H))
        init_np = (h0, c0) if cls is nn.LSTM else h0
        init = (oar.to_tensor(h0), oar.to_tensor(c0)) if cls is nn.LSTM else oar.to_tensor(h0)
    else:
        z = np.zeros((n, B, H))
        init_np, init = ((z, z) if cls is nn.LSTM else z), None
    xin = x.transpose(1, 0, 2) if time_major else x
    out, final = layer(oar.to_tensor(xin), init,
                       oar.to_tensor(lens) if with_lens else None)
    ref_out, ref_final = np_rnnbase(layer, x, init_np, lens)
    if time_major:
        ref_out = ref_out.transpose(1, 0, 2)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    if cls is nn.LSTM:
        for a, b in zip(final, ref_final):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(final.numpy(), ref_final, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cell_cls", [nn.SimpleRNNCell, nn.LSTMCell, nn.GRUCell])
def test_cells_vs_numpy(cell_cls):
    cell = cell_cls(3, 4)
    x = RNG.standard_normal((2, 3))
    h = RNG.standard_normal((2, 4))
    state = (h, RNG.standard_normal((2, 4))) if cell_cls is nn.LSTMCell else h
    st = tuple(map(oar.to_tensor, state)) if cell_cls is nn.LSTMCell else oar.to_tensor(state)
    out, new = cell(oar.to_tensor(x), st)
    ref_out, ref_new = np_cell(cell, x, state)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12)
    # default zero states
    out0, _ = cell(oar.to_tensor(x))
    zs = (np.zeros((2, 4)),) * 2 if cell_cls is nn.LSTMCell else np.zeros((2, 4))
    np.testing.assert_allclose(out0.numpy(), np_cell(cell, x, zs)[0], rtol=1e-12)


def test_rnn_and_birnn_wrappers_with_custom_cell():
    cell = nn.GRUCell(3, 4)
    x = RNG.standard_normal((2, 5, 3))
    out, h = nn.RNN(cell, is_reverse=True)(oar.to_tensor(x))
    ref, ref_h = np_run(cell, x, np.zeros((2, 4)), True, np.full(2, 5))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    bi = nn.BiRNN(nn.LSTMCell(3, 4), nn.LSTMCell(3, 4))
    out, (fw, bw) = bi(oar.to_tensor(x))
    assert out.shape == [2, 5, 8] and fw[0].shape == [2, 4]
    assert sorted(k.split(".")[0] for k in bi.state_dict()) == ["cell_bw"] * 4 + ["cell_fw"] * 4

    class Doubler(nn.Layer):  # a user cell without the fast path
        state_shape = (3,)

        def get_initial_states(self, batch_ref, batch_dim_idx=0, **kw):
            return oar.zeros([batch_ref.shape[batch_dim_idx], 3], dtype="float64")

        def forward(self, x, h):
            h = h + x * 2.0
            return h, h
    out, h = nn.RNN(Doubler())(oar.to_tensor(x))
    np.testing.assert_allclose(out.numpy(), np.cumsum(2 * x, 1), rtol=1e-12)


@pytest.mark.parametrize("cls", [nn.SimpleRNN, nn.LSTM, nn.GRU])
def test_gradients_finite_differences(cls):
    layer = cls(2, 3, direction="bidirect")

    def fn(x, h0):
        init = (h0, h0 * 0.5) if cls is nn.LSTM else h0
        out, _ = layer(x, init, oar.to_tensor(np.array([3, 2])))
        return out
    check_grad(OpCase(cls.__name__, fn, None, inputs=[normal((2, 3, 2)), normal((2, 2, 3))],
                      grad_tol=(1e-7, 1e-6)))
    # parameters get gradients too
    out, _ = layer(oar.to_tensor(RNG.standard_normal((2, 3, 2))))
    out.sum().backward()
    assert all(p.grad is not None for p in layer.parameters())


def test_parameter_names_shapes_and_init():
    lstm = nn.LSTM(4, 5, num_layers=2, direction="bidirect")
    sd = lstm.state_dict()
    assert list(sd)[:8] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                            "weight_ih_l0_reverse", "weight_hh_l0_reverse",
                            "bias_ih_l0_reverse", "bias_hh_l0_reverse"]
    assert sd["weight_ih_l0"].shape == [20, 4] and sd["weight_ih_l1"].shape == [20, 10]
    assert sd["weight_hh_l1_reverse"].shape == [20, 5]
    assert nn.GRU(4, 5).weight_ih_l0.shape == [15, 4]
    w = nn.SimpleRNN(4, 100).weight_hh_l0.numpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.08  # U(-1/sqrt(H), 1/sqrt(H))
    assert len(lstm.parameters()) == 16


def test_dropout_between_layers():
    g = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = oar.to_tensor(RNG.standard_normal((2, 4, 3)))
    g.eval()
    a, b = g(x)[0].numpy(), g(x)[0].numpy()
    np.testing.assert_array_equal(a, b)
    g.train()
    assert not np.allclose(g(x)[0].numpy(), a)


def test_bad_arguments():
    with pytest.raises(ValueError, match="direction"):
        nn.LSTM(3, 4, direction="backward")
    with pytest.raises(ValueError, match="num_layers"):
        nn.GRU(3, 4, num_layers=0)
    with pytest.raises(ValueError, match="hidden_size"):
        nn.LSTMCell(3, 0)
    with pytest.raises(ValueError, match="activation"):
        nn.SimpleRNNCell(3, 4, activation="sigmoid")
    lstm = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="inputs"):
        lstm(oar.zeros([2, 5, 7], dtype="float64"))
    with pytest.raises(ValueError, match="initial state"):
        lstm(oar.zeros([2, 5, 3], dtype="float64"),
             (oar.zeros([2, 2, 4], dtype="float64"),) * 2)
    with pytest.raises(ValueError, match="sequence_length"):
        lstm(oar.zeros([2, 5, 3], dtype="float64"), None, oar.to_tensor([1, 2, 3]))
