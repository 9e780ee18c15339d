"""The fused LSTM op (lstm_sequence, Note [Fused LSTM] in phi_kernels/cpu/rnn_kernels.cc), in
both layouts and directions: against a float64 NumPy recurrence, finite-difference
gradients through all three outputs, bad inputs; nn.LSTM through it equals the composed cell (forward and parameter gradients,
reverse and multi-layer), with only some outputs used, and under to_static."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from op_test_utils import OpCase, check_bad_inputs, check_forward, check_grad, normal
from test_rnn_fused import assert_same_results

_ops = oar._C.ops


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_lstm_sequence(xw, w, h0, c0, bias=None, batch_first=False, reverse=False):
    """xw [T, B, 4H] (batch_first: [B, T, 4H]), w [4H, H], bias [4H] -> out (xw's layout),
    h_T, c_T; reverse walks the time steps backwards."""
    x = np.swapaxes(xw, 0, 1) if batch_first else xw
    bias = np.zeros(xw.shape[-1]) if bias is None else bias
    h, c, outs = h0, c0, [None] * x.shape[0]
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in order:
        i, f, g, o = np.split(x[t] + bias + h @ w.T, 4, -1)
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        outs[t] = h
    out = np.stack(outs) if outs else np.zeros((0,) + h0.shape)
    return (np.swapaxes(out, 0, 1) if batch_first else out), h, c


def _flat(out, h, c):
    return out.reshape([-1]), h.reshape([-1]), c.reshape([-1])


def _fn_oar(xw, w, bias, h0, c0, batch_first=False, reverse=False):
    out, h, c, _, _ = _ops._lstm_sequence(xw, w, bias, h0, c0, batch_first, reverse)
    return oar.concat(list(_flat(out, h, c)))


def _fn_np(xw, w, bias, h0, c0, batch_first=False, reverse=False):
    return np.concatenate([a.reshape(-1) for a in np_lstm_sequence(xw, w, h0, c0, bias, batch_first,
                                                                   reverse)])


def _shapes(t, b, h, batch_first=False):
    return [(b, t, 4 * h) if batch_first else (t, b, 4 * h), (4 * h, h), (4 * h,), (b, h), (b, h)]


def _z(*shape, dtype="float32"):
    return oar.zeros(list(shape), dtype)


def _case(batch_first, reverse):
    sets = [_shapes(*s, batch_first) for s in ((3, 2, 2), (1, 3, 5), (0, 2, 3), (4, 0, 2), (2, 1, 17))]
    return OpCase(
        "lstm_sequence", _fn_oar, _fn_np, inputs=[normal(s) for s in sets[0]],
        dtypes=["float32", "float64"], attrs={"batch_first": batch_first, "reverse": reverse},
        shapes=sets, grad_shapes=[sets[0], _shapes(2, 1, 3, batch_first)],
        bad_inputs=[
            (lambda: [_z(2, 3, 7), _z(8, 2), _z(8), _z(3, 2), _z(3, 2)], ValueError,
             "[time, batch, 4 * hidden]" if not batch_first else "[batch, time, 4 * hidden]"),
            (lambda: [_z(2, 3, 8), _z(8, 3), _z(8), _z(3, 2), _z(3, 2)], ValueError,
             "w_hh must have shape [8, 2]"),
            (lambda: [_z(2, 3, 8), _z(8, 2), _z(8), _z(1, 2), _z(1, 2)], ValueError,
             "h0 must have shape [" + ("2" if batch_first else "3") + ", 2]"),
            (lambda: [_z(2, 3, 8), _z(8, 2), _z(7), _z(3, 2), _z(3, 2)], ValueError,
             "bias must be a float32 vector of 8 values"),
            (lambda: [_z(2, 3, 8, dtype="int32"), _z(8, 2, dtype="int32"), _z(8, dtype="int32"),
                      _z(3, 2, dtype="int32"), _z(3, 2, dtype="int32")], TypeError, "float32 or float64"),
            (lambda: [_z(2, 3, 8), _z(8, 2, dtype="float64"), _z(8), _z(3, 2), _z(3, 2)], TypeError,
             "w_hh must have dtype"),
        ])


CASES = [_case(bf, rev) for bf in (False, True) for rev in (False, True)]
IDS = [f"batch_first={c.attrs['batch_first']},reverse={c.attrs['reverse']}" for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_vs_numpy(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_finite_differences(case):
    check_grad(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_inputs(case):
    check_bad_inputs(case)


# ---- nn.LSTM through the fused op vs the composed cell
class _ComposedCell(nn.LSTMCell):
    """An LSTMCell subclass: RNN runs it step by step (the fused path takes LSTMCell only)."""


def _pair(**kw):
    oar.seed(5)
    fused = nn.LSTM(3, 4, **kw)
    composed = nn.LSTM(3, 4, **kw)
    composed.set_state_dict(fused.state_dict())
    for layer in composed:
        for name in ("cell", "cell_fw", "cell_bw"):
            cell = getattr(layer, name, None)
            if cell is not None:
                cell.__class__ = _ComposedCell
    return fused, composed


@pytest.mark.parametrize("kw", [{}, {"direction": "bidirect"}, {"num_layers": 2},
                                {"time_major": True}, {"time_major": True, "direction": "bidirect"}])
def test_lstm_layer_matches_composed_cell(kw):
    oar.set_default_dtype("float64")
    try:
        fused, composed = _pair(**kw)
        x = np.random.default_rng(1).standard_normal((2, 5, 3))
        results = []
        for net in (fused, composed):
            xt = oar.to_tensor(x, stop_gradient=False)
            out, (h, c) = net(xt)
            loss = (out * out).sum() + (h * 2.0).sum() + c.sum()
            loss.backward()
            grads = {k: p.grad.numpy() for k, p in net.named_parameters()}
            results.append([out.numpy(), h.numpy(), c.numpy(), xt.grad.numpy(), grads])
        assert_same_results(*results)
    finally:
        oar.set_default_dtype("float32")


@pytest.mark.parametrize("use", ["out", "h", "c"])
def test_only_some_outputs_used(use):
    """An output nothing reads gets no gradient: its absent gradient counts as zero."""
    oar.seed(3)
    xw = oar.randn([3, 2, 8], "float64")
    w = oar.randn([8, 2], "float64")
    bias = oar.randn([8], "float64")
    h0, c0 = oar.randn([2, 2], "float64"), oar.randn([2, 2], "float64")
    for t in (xw, w, bias, h0, c0):
        t.stop_gradient = False
    out, h, c, _, _ = _ops._lstm_sequence(xw, w, bias, h0, c0)
    pick = {"out": out, "h": h, "c": c}[use]
    gx, gw, gb = oar.grad([pick.sum()], [xw, w, bias])
    # reference: the same objective through the full concatenation with zero weights elsewhere
    full = _fn_oar(xw, w, bias, h0, c0)
    n_out, n_h = out.size, h.size
    weights = np.zeros(full.shape)
    sl = {"out": slice(0, n_out), "h": slice(n_out, n_out + n_h), "c": slice(n_out + n_h, None)}[use]
    weights[sl] = 1.0
    rx, rw, rb = oar.grad([(full * oar.to_tensor(weights)).sum()], [xw, w, bias])
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gb.numpy(), rb.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-12, atol=1e-14)


def test_lstm_to_static_matches_eager():
    oar.seed(4)
    net = nn.LSTM(3, 5, direction="bidirect")
    x = oar.randn([2, 6, 3])
    eager_out, (eh, ec) = net(x)
    static = oar.jit.to_static(net)
    out, (h, c) = static(x)
    np.testing.assert_allclose(out.numpy(), eager_out.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), eh.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), ec.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("batch_first,reverse", [(False, False), (True, True)])
def test_float32_gradients_at_hidden_128_match_float64(batch_first, reverse):
    """Hidden 128 makes da's rows 512 floats apart: dW_hh = da^T h_prev takes OpenBLAS
    (phi_kernels/cpu/sgemm.cc); the float32 gradients equal the float64 kernel's (checked
    against finite differences above) to float32 accuracy, with the output's gradient too."""
    rng = np.random.default_rng(7)
    T, B, H = 5, 3, 128
    arrays = [rng.standard_normal(s) * sc for s, sc in zip(_shapes(T, B, H, batch_first), (1, 0.1, 1, 1, 1))]
    gout = rng.standard_normal((B, T, H) if batch_first else (T, B, H))
    grads = {}
    for dt in ("float32", "float64"):
        ts = [oar.to_tensor(a.astype(dt), stop_gradient=False) for a in arrays]
        out, h, c, _, _ = _ops._lstm_sequence(*ts, batch_first, reverse)
        loss = (out * oar.to_tensor(gout.astype(dt))).sum() + (h * h).sum() + c.sum()
        grads[dt] = [g.numpy().astype(np.float64) for g in oar.grad([loss], ts)]
    for name, g32, g64 in zip(("xw", "w_hh", "bias", "h0", "c0"), grads["float32"], grads["float64"]):
        np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-3 * np.abs(g64).max(), err_msg=name)
