"""The fused GRU and SimpleRNN ops (gru_sequence, rnn_sequence; Note [Fused GRU and SimpleRNN]
in phi_kernels/cpu/rnn_kernels.cc) in both layouts and directions: against float64 NumPy
recurrences (odd sizes, 0-size batch/time/hidden), finite-difference gradients, bad inputs;
nn.GRU / nn.SimpleRNN through them equal the composed cells (outputs, states, input and
parameter gradients; bidirectional, 2 layers, time-major, initial states) and run fused
under to_static."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from op_test_utils import OpCase, check_bad_inputs, check_forward, check_grad, normal

_ops = oar._C.ops


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _walk(xw, h0, batch_first, reverse, step):
    x = np.swapaxes(xw, 0, 1) if batch_first else xw
    h, outs = h0, [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h = step(x[t], h)
        outs[t] = h
    out = np.stack(outs) if outs else np.zeros((0,) + h0.shape)
    return (np.swapaxes(out, 0, 1) if batch_first else out), h


def np_gru_sequence(xw, w, b_ih, b_hh, h0, batch_first=False, reverse=False):
    """Paddle's GRU, gates [r, z, c]: xw = x W_ih^T without bias."""
    def step(xt, h):
        x_r, x_z, x_c = np.split(xt + b_ih, 3, -1)
        h_r, h_z, h_c = np.split(h @ w.T + b_hh, 3, -1)
        r, z = _sig(x_r + h_r), _sig(x_z + h_z)
        c = np.tanh(x_c + r * h_c)
        return (h - c) * z + c
    return _walk(xw, h0, batch_first, reverse, step)


def np_rnn_sequence(xw, w, bias, h0, batch_first=False, reverse=False, activation="tanh"):
    act = np.tanh if activation == "tanh" else (lambda v: np.maximum(v, 0.0))
    return _walk(xw, h0, batch_first, reverse, lambda xt, h: act(xt + bias + h @ w.T))


def _gru_oar(xw, w, b_ih, b_hh, h0, batch_first=False, reverse=False):
    out, h, _ = _ops._gru_sequence(xw, w, b_ih, b_hh, h0, batch_first, reverse)
    return oar.concat([out.reshape([-1]), h.reshape([-1])])


def _gru_np(xw, w, b_ih, b_hh, h0, batch_first=False, reverse=False):
    out, h = np_gru_sequence(xw, w, b_ih, b_hh, h0, batch_first, reverse)
    return np.concatenate([out.reshape(-1), h.reshape(-1)])


def _rnn_oar(xw, w, bias, h0, batch_first=False, reverse=False, activation="tanh"):
    out, h = _ops._rnn_sequence(xw, w, bias, h0, batch_first, reverse, activation)
    return oar.concat([out.reshape([-1]), h.reshape([-1])])


def _rnn_np(xw, w, bias, h0, batch_first=False, reverse=False, activation="tanh"):
    out, h = np_rnn_sequence(xw, w, bias, h0, batch_first, reverse, activation)
    return np.concatenate([out.reshape(-1), h.reshape(-1)])


def _z(*shape, dtype="float32"):
    return oar.zeros(list(shape), dtype)


SIZES = [(3, 2, 2), (1, 3, 5), (0, 2, 3), (4, 0, 2), (2, 1, 17), (5, 3, 0)]


def _gru_shapes(t, b, h, bf):
    return [(b, t, 3 * h) if bf else (t, b, 3 * h), (3 * h, h), (3 * h,), (3 * h,), (b, h)]


def _rnn_shapes(t, b, h, bf):
    return [(b, t, h) if bf else (t, b, h), (h, h), (h,), (b, h)]


def _gru_case(bf, rev):
    sets = [_gru_shapes(*s, bf) for s in SIZES]
    return OpCase(
        "gru_sequence", _gru_oar, _gru_np, inputs=[normal(s) for s in sets[0]],
        dtypes=["float32", "float64"], attrs={"batch_first": bf, "reverse": rev}, shapes=sets,
        grad_shapes=[sets[0], _gru_shapes(2, 1, 3, bf)],
        # (written for the time-major layout: [2, 3, ...] is T=2, B=3)
        bad_inputs=[] if bf else [
            (lambda: [_z(2, 3, 7), _z(6, 2), _z(6), _z(6), _z(3, 2)], ValueError, "3 * hidden]"),
            (lambda: [_z(2, 3, 6), _z(6, 3), _z(6), _z(6), _z(3, 2)], ValueError, "w_hh must have shape [6, 2]"),
            (lambda: [_z(2, 3, 6), _z(6, 2), _z(5), _z(6), _z(3, 2)], ValueError,
             "bias_ih must be a float32 vector of 6 values"),
            (lambda: [_z(2, 3, 6), _z(6, 2), _z(6), _z(6, dtype="float64"), _z(3, 2)], ValueError,
             "bias_hh must be a float32 vector"),
            (lambda: [_z(2, 3, 6), _z(6, 2), _z(6), _z(6), _z(1, 2)], ValueError, "h0 must have shape"),
            (lambda: [_z(2, 3, 6, dtype="int64"), _z(6, 2, dtype="int64"), _z(6, dtype="int64"),
                      _z(6, dtype="int64"), _z(3, 2, dtype="int64")], TypeError, "float32 or float64"),
        ])


def _rnn_case(bf, rev, act):
    sets = [_rnn_shapes(*s, bf) for s in SIZES]
    return OpCase(
        "rnn_sequence", _rnn_oar, _rnn_np, inputs=[normal(s) for s in sets[0]],
        dtypes=["float32", "float64"], attrs={"batch_first": bf, "reverse": rev, "activation": act},
        shapes=sets, grad_shapes=[sets[0], _rnn_shapes(2, 1, 3, bf)],
        bad_inputs=[] if bf else [
            (lambda: [_z(2, 3, 2), _z(3, 3), _z(2), _z(3, 2)], ValueError, "w_hh must have shape [2, 2]"),
            (lambda: [_z(2, 3, 2), _z(2, 2), _z(3), _z(3, 2)], ValueError, "bias must be a float32 vector of 2"),
            (lambda: [_z(2, 3), _z(2, 2), _z(2), _z(3, 2)], ValueError, "xw must have shape"),
            (lambda: [_z(2, 3, 2), _z(2, 2), _z(2), _z(3, 2)], ValueError, "activation must be 'tanh' or 'relu'",
             {"activation": "sigmoid"}),
        ])


GRU_CASES = [_gru_case(bf, rev) for bf in (False, True) for rev in (False, True)]
RNN_CASES = [_rnn_case(bf, rev, act) for bf in (False, True) for rev in (False, True)
             for act in ("tanh", "relu")]
ALL = GRU_CASES + RNN_CASES
IDS = [f"{c.name}-" + ",".join(f"{k}={v}" for k, v in c.attrs.items()) for c in ALL]


@pytest.mark.parametrize("case", ALL, ids=IDS)
def test_forward_vs_numpy(case):
    check_forward(case)


@pytest.mark.parametrize("case", ALL, ids=IDS)
def test_gradients_finite_differences(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in ALL if c.bad_inputs], ids=[i for c, i in zip(ALL, IDS) if c.bad_inputs])
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_bad_inputs_batch_first_names_its_layout():
    with pytest.raises(ValueError, match=r"gru_sequence: xw must have shape \[batch, time, 3 \* hidden\]"):
        _ops._gru_sequence(_z(2, 3, 7), _z(6, 2), _z(6), _z(6), _z(2, 2), True, False)


def assert_same_results(r1, r2):
    """Two runs' [arrays..., {parameter: gradient}] agree to float64 rounding."""
    *a1, g1 = r1
    *a2, g2 = r2
    for a, b in zip(a1, a2):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert g1.keys() == g2.keys()
    for k in g1:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-10, atol=1e-12, err_msg=k)


# ---- nn.GRU / nn.SimpleRNN through the fused ops vs the composed cells
class _ComposedGRU(nn.GRUCell):
    """A subclass: RNN runs it step by step (the fused path takes the exact cell types)."""


class _ComposedSimple(nn.SimpleRNNCell):
    pass


def _pair(cls, **kw):
    oar.seed(5)
    fused = cls(3, 4, **kw)
    composed = cls(3, 4, **kw)
    composed.set_state_dict(fused.state_dict())
    sub = _ComposedGRU if cls is nn.GRU else _ComposedSimple
    for layer in composed:
        for name in ("cell", "cell_fw", "cell_bw"):
            cell = getattr(layer, name, None)
            if cell is not None:
                cell.__class__ = sub
    return fused, composed


KWS = [{}, {"direction": "bidirect"}, {"num_layers": 2}, {"time_major": True},
       {"num_layers": 2, "direction": "bidirect", "time_major": True}]
LAYERS = [(nn.GRU, {}), (nn.SimpleRNN, {}), (nn.SimpleRNN, {"activation": "relu"})]


@pytest.mark.parametrize("cls,extra", LAYERS, ids=["GRU", "SimpleRNN-tanh", "SimpleRNN-relu"])
@pytest.mark.parametrize("kw", KWS, ids=[str(k) for k in KWS])
@pytest.mark.parametrize("with_h0", [False, True])
def test_layer_matches_composed_cell(cls, extra, kw, with_h0):
    oar.set_default_dtype("float64")
    try:
        fused, composed = _pair(cls, **kw, **extra)
        rng = np.random.default_rng(1)
        x = rng.standard_normal((2, 5, 3))
        n = fused.num_layers * fused.num_directions
        h0 = rng.standard_normal((n, 5 if kw.get("time_major") else 2, 4)) if with_h0 else None
        results = []
        for net in (fused, composed):
            xt = oar.to_tensor(x, stop_gradient=False)
            ht = None if h0 is None else oar.to_tensor(h0, stop_gradient=False)
            out, h = net(xt, ht)
            loss = (out * out).sum() + (h * 2.0).sum()
            loss.backward()
            grads = {k: p.grad.numpy() for k, p in net.named_parameters()}
            extra_g = [] if ht is None else [ht.grad.numpy()]
            results.append([out.numpy(), h.numpy(), xt.grad.numpy()] + extra_g + [grads])
        assert_same_results(results[0], results[1])
    finally:
        oar.set_default_dtype("float32")


def test_layer_without_biases():
    oar.set_default_dtype("float64")
    try:
        for cls in (nn.GRU, nn.SimpleRNN):
            oar.seed(2)
            net = cls(3, 4, bias_ih_attr=False, bias_hh_attr=False)
            x = oar.to_tensor(np.random.default_rng(2).standard_normal((2, 3, 3)))
            out, h = net(x)
            cell = net[0].cell
            w_ih, w_hh = cell.weight_ih.numpy(), cell.weight_hh.numpy()
            xw = x.numpy() @ w_ih.T
            if cls is nn.GRU:
                zero = np.zeros(12)
                ref, rh = np_gru_sequence(xw, w_hh, zero, zero, np.zeros((2, 4)), batch_first=True)
            else:
                ref, rh = np_rnn_sequence(xw, w_hh, np.zeros(4), np.zeros((2, 4)), batch_first=True)
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(h.numpy()[0], rh, rtol=1e-10, atol=1e-12)
    finally:
        oar.set_default_dtype("float32")


@pytest.mark.parametrize("cls,op", [(nn.GRU, "gru_sequence"), (nn.SimpleRNN, "rnn_sequence")])
def test_to_static_runs_the_fused_op(cls, op):
    oar.seed(4)
    net = cls(3, 5, direction="bidirect")
    x = oar.randn([2, 6, 3])
    eager_out, eh = net(x)
    static = oar.jit.to_static(net)
    out, h = static(x)
    np.testing.assert_allclose(out.numpy(), eager_out.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), eh.numpy(), rtol=1e-6, atol=1e-6)
    (prog,) = static.forward.concrete_programs
    text = str(prog.program)
    assert f"pd_op.{op}" in text and "cf.while" not in text
