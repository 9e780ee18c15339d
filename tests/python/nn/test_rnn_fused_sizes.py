"""The fused recurrent ops at hidden sizes around the 8x8 tiles of their W_hh transposes
(Note [Fused LSTM]: the forward runs h W_hh^T as an NN product on W_hh^T, the weight
gradient is transposed back; float32 takes the AVX tile path, float64 the scalar one):
float32 forward against float64 NumPy, float32 gradients against the float64 kernel's,
float64 nn layers against the composed cells (an independent path), batch 1, length 1,
both layouts and directions, at 1 and 2 threads."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from test_lstm_fused import np_lstm_sequence
from test_rnn_fused import assert_same_results, np_gru_sequence, np_rnn_sequence

_ops = oar._C.ops
HIDDEN = [8, 13, 24, 33]


def _inputs(kind, t, b, h, batch_first, rng):
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind] * h
    xw = rng.standard_normal((b, t, g) if batch_first else (t, b, g))
    w = rng.standard_normal((g, h)) * 0.3
    rest = {"lstm": [(g,), (b, h), (b, h)], "gru": [(g,), (g,), (b, h)], "rnn": [(h,), (b, h)]}[kind]
    return [xw, w] + [rng.standard_normal(s) for s in rest]


def _run(kind, arrays, batch_first, reverse, dtype):
    ts = [oar.to_tensor(a.astype(dtype), stop_gradient=False) for a in arrays]
    if kind == "lstm":
        out, h, c, _, _ = _ops._lstm_sequence(*ts, batch_first, reverse)
        states = [h, c]
    elif kind == "gru":
        out, h, _ = _ops._gru_sequence(*ts, batch_first, reverse)
        states = [h]
    else:
        out, h = _ops._rnn_sequence(*ts, batch_first, reverse, "tanh")
        states = [h]
    return ts, out, states


def _np(kind, arrays, batch_first, reverse):
    if kind == "lstm":
        xw, w, bias, h0, c0 = arrays
        return np_lstm_sequence(xw, w, h0, c0, bias, batch_first, reverse)
    if kind == "gru":
        return np_gru_sequence(*arrays, batch_first, reverse)
    return np_rnn_sequence(*arrays, batch_first, reverse)



@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("t,b", [(7, 5), (1, 1), (6, 1), (1, 4)])
@pytest.mark.parametrize("batch_first,reverse", [(False, False), (True, True)])
def test_float32_forward_vs_numpy_and_gradients_vs_float64(kind, hidden, t, b, batch_first, reverse, threads):
    rng = np.random.default_rng(hidden * 100 + t * 10 + b)
    arrays = _inputs(kind, t, b, hidden, batch_first, rng)
    ref = _np(kind, arrays, batch_first, reverse)
    gout = rng.standard_normal(ref[0].shape)
    grads = {}
    for dt in ("float32", "float64"):
        ts, out, states = _run(kind, arrays, batch_first, reverse, dt)
        if dt == "float32":
            for got, want in zip([out] + states, ref):
                np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-5)
        loss = (out * oar.to_tensor(gout.astype(dt))).sum()
        for s in states:
            loss = loss + (s * s).sum()
        grads[dt] = [g.numpy().astype(np.float64) for g in oar.grad([loss], ts)]
    for i, (g32, g64) in enumerate(zip(grads["float32"], grads["float64"])):
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(g64).max()),
                                   err_msg=f"input {i}")


class _ComposedLSTM(nn.LSTMCell):
    """A subclass: RNN runs it step by step (the fused path takes the exact cell types)."""


class _ComposedGRU(nn.GRUCell):
    pass


class _ComposedSimple(nn.SimpleRNNCell):
    pass


_SUB = {nn.LSTM: _ComposedLSTM, nn.GRU: _ComposedGRU, nn.SimpleRNN: _ComposedSimple}


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.SimpleRNN])
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("kw", [{}, {"direction": "bidirect", "num_layers": 2}])
def test_float64_layers_match_composed_cells(cls, hidden, kw):
    oar.set_default_dtype("float64")
    try:
        oar.seed(hidden)
        fused, composed = cls(5, hidden, **kw), cls(5, hidden, **kw)
        composed.set_state_dict(fused.state_dict())
        for layer in composed:
            for name in ("cell", "cell_fw", "cell_bw"):
                cell = getattr(layer, name, None)
                if cell is not None:
                    cell.__class__ = _SUB[cls]
        x = np.random.default_rng(hidden).standard_normal((3, 4, 5))
        results = []
        for net in (fused, composed):
            xt = oar.to_tensor(x, stop_gradient=False)
            out, states = net(xt)
            states = states if isinstance(states, tuple) else (states,)
            loss = (out * out).sum()
            for s in states:
                loss = loss + (s * 1.5).sum()
            loss.backward()
            grads = {k: p.grad.numpy() for k, p in net.named_parameters()}
            results.append([out.numpy(), xt.grad.numpy()] + [s.numpy() for s in states] + [grads])
        assert_same_results(*results)
    finally:
        oar.set_default_dtype("float32")
