"""paddle.quantization: fake quant-dequant against NumPy, observers, QAT/PTQ layer swaps,
convert, and errors."""
import numpy as np
import pytest

import oar
from oar.quantization import PTQ, QAT, QuantConfig
from oar.quantization.base_quanter import fake_quant_dequant
from oar.quantization.observers import AbsmaxObserver
from oar.quantization.quanters import FakeQuanterWithAbsMaxObserver


def _ref_qdq(x, scale, bits):
    bound = 2.0 ** (bits - 1) - 1
    return np.round(np.clip(x / scale * bound, -bound, bound)) * scale / bound


@pytest.mark.parametrize("shape", [[0], [5], [3, 4], [2, 0, 3]])
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_fake_quant_dequant_matches_numpy(shape, bits):
    rng = np.random.default_rng(bits)
    x = rng.standard_normal(shape) * 3
    scale = 2.5
    got = fake_quant_dequant(oar.to_tensor(x), oar.to_tensor(scale, dtype="float64"), bits).numpy()
    np.testing.assert_allclose(got, _ref_qdq(x, scale, bits), rtol=1e-12, atol=1e-12)


def test_fake_quant_dequant_gradient_is_straight_through():
    x = oar.to_tensor(np.linspace(-4, 4, 9), stop_gradient=False)
    w = oar.to_tensor(np.arange(9.0))
    (fake_quant_dequant(x, oar.to_tensor(1.0, dtype="float64"), 8) * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.arange(9.0))


def test_absmax_observer_records_running_max_and_passes_values():
    obs = AbsmaxObserver(quant_bits=4)._instance(None)
    a, b = np.array([1.0, -3.0, 2.0], "float32"), np.array([-2.5, 0.5], "float32")
    out = obs(oar.to_tensor(a))
    np.testing.assert_array_equal(out.numpy(), a)
    obs(oar.to_tensor(b))
    assert float(obs.scales()) == 3.0 and obs.bit_length() == 4 and obs.zero_points() is None


def test_fake_quanter_moving_average_scale():
    q = FakeQuanterWithAbsMaxObserver(moving_rate=0.5)._instance(None)
    q.train()
    accum = state = 0.0
    for m in (2.0, 4.0, 1.0):
        x = np.array([m, -m / 2], "float32")
        y = q(oar.to_tensor(x))
        accum, state = 0.5 * accum + m, 0.5 * state + 1
        np.testing.assert_allclose(float(q.scales()), accum / state, rtol=1e-6)
        np.testing.assert_allclose(y.numpy(), _ref_qdq(x.astype(np.float64), accum / state, 8), rtol=1e-5,
                                   atol=1e-6)
    q.eval()
    before = float(q.scales())
    q(oar.to_tensor(np.array([100.0], "float32")))
    assert float(q.scales()) == before  # eval keeps the learned scale


def _model():
    return oar.nn.Sequential(oar.nn.Conv2D(2, 3, 3, padding=1), oar.nn.ReLU(), oar.nn.Flatten(),
                             oar.nn.Linear(3 * 4 * 4, 5))


def test_qat_swaps_layers_keeps_order_and_trains():
    oar.seed(0)
    model = _model()
    q_config = QuantConfig(activation=FakeQuanterWithAbsMaxObserver(moving_rate=0.9),
                           weight=FakeQuanterWithAbsMaxObserver(moving_rate=0.9))
    qm = QAT(q_config).quantize(model)
    assert [type(m).__name__ for m in qm.children()] == ["QuantedConv2D", "ObserveWrapper", "ObserveWrapper",
                                                         "QuantedLinear"]
    assert type(model[0]).__name__ == "Conv2D"  # not inplace: the original model is unchanged
    x = oar.randn([4, 2, 4, 4])
    ref = model(x).numpy()
    out = qm(x)
    # 8-bit fake quantization stays close to the float model
    assert np.abs(out.numpy() - ref).max() < 0.05 * (np.abs(ref).max() + 1)
    out.sum().backward()
    assert qm[0].weight.grad is not None and qm[3].weight.grad is not None
    assert str(q_config).startswith("Global config:\nactivation: FakeQuanterWithAbsMaxObserver(name=None,"
                                    "moving_rate=0.9,bit_length=8,dtype=float32)")


def test_ptq_observes_then_converts():
    model = _model()
    model.eval()
    obs = AbsmaxObserver()
    ptq = PTQ(QuantConfig(activation=obs, weight=obs))
    qm = ptq.quantize(model)
    x = oar.randn([4, 2, 4, 4])
    np.testing.assert_allclose(qm(x).numpy(), model(x).numpy(), rtol=1e-6)  # observers pass values through
    np.testing.assert_allclose(float(qm[0].activation_quanter.scales()), np.abs(x.numpy()).max(), rtol=1e-6)
    frozen = ptq.convert(qm)
    assert type(frozen[0].weight_quanter).__name__ == "LinearQuanterDequanter"
    ref = model(x).numpy()
    assert np.abs(frozen(x).numpy() - ref).max() < 0.05 * (np.abs(ref).max() + 1)
    with pytest.raises(RuntimeError, match="has no scale: run the quantized model on data first"):
        ptq.convert(ptq.quantize(model))


def test_config_overrides_and_customizations():
    q = FakeQuanterWithAbsMaxObserver()
    model = _model()
    cfg = QuantConfig(activation=None, weight=None)
    cfg.add_type_config(oar.nn.Linear, activation=q, weight=q)
    qm = QAT(cfg).quantize(model)
    assert [type(m).__name__ for m in qm.children()] == ["Conv2D", "ReLU", "Flatten", "QuantedLinear"]

    class MyConv(oar.nn.Layer):
        def __init__(self, layer, config):
            super().__init__()
            self.inner = layer

        def forward(self, x):
            return self.inner(x)
    cfg2 = QuantConfig(activation=q, weight=q)
    cfg2.add_qat_layer_mapping(oar.nn.Conv2D, MyConv)
    cfg2.add_customized_leaf(oar.nn.Sequential)
    assert type(QAT(cfg2).quantize(_model())[0]).__name__ == "MyConv"
    cfg3 = QuantConfig(activation=None, weight=None)
    cfg3.add_layer_config([model[3]], activation=q, weight=q)
    assert cfg3._prefix2config


@pytest.mark.parametrize("call, err, msg", [
    (lambda: QuantConfig(activation=3, weight=None), TypeError, "activation must be a quanter or observer factory"),
    (lambda: FakeQuanterWithAbsMaxObserver(moving_rate=1.5)._instance(None), ValueError,
     "moving_rate must be in \\[0, 1\\), got 1.5"),
    (lambda: FakeQuanterWithAbsMaxObserver(bogus=1), TypeError, "unexpected argument 'bogus'"),
    (lambda: AbsmaxObserver(quant_bits=1)._instance(None), ValueError, "quant_bits must be an int in \\[2, 16\\]"),
    (lambda: QAT("cfg"), TypeError, "QAT: config must be a QuantConfig"),
    (lambda: QAT(QuantConfig(None, None)).quantize("model"), TypeError, "QAT.quantize: model must be"),
    (lambda: PTQ(QuantConfig(None, None)).quantize(_model()), ValueError, "must be in eval mode"),
    (lambda: QuantConfig(None, None).add_qat_layer_mapping(oar.nn.Conv2D, int), TypeError,
     "target must be a Layer class"),
])
def test_bad_inputs(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
