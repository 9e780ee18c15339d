"""SpectralNorm, nn.utils.spectral_norm, SyncBatchNorm (one process; the 2-process run is
tests/python/distributed/test_sync_batch_norm.py), the Assign initializer's shape rule, Tensor
attributes as buffers, and paddle.nn.quant (Stub, quant_layers): float64 NumPy references,
central differences, bad inputs."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F


def F64(a, grad=False):
    return oar.to_tensor(np.asarray(a, dtype=np.float64), stop_gradient=not grad)


def np_sigma(w, dim, u, v, iters, eps):
    mat = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    for _ in range(iters):
        v = mat.T @ u
        v = v / (np.linalg.norm(v) + eps)
        u = mat @ v
        u = u / (np.linalg.norm(u) + eps)
    return u @ mat @ v, u, v, mat


@pytest.mark.parametrize("shape,dim,iters", [((4, 3), 0, 1), ((3, 4, 2), 1, 2), ((2, 3, 2, 2), 3, 3),
                                             ((5, 2, 3), 0, 0)])
def test_spectral_norm_layer_forward_and_grad(shape, dim, iters):
    sn = nn.SpectralNorm(shape, dim=dim, power_iters=iters, eps=1e-12, dtype="float64")
    assert [n for n, _ in sn.named_parameters()] == ["weight_u", "weight_v"]
    assert sn.weight_u.stop_gradient and sn.weight_v.stop_gradient
    u0, v0 = sn.weight_u.numpy().copy(), sn.weight_v.numpy().copy()
    rng = np.random.default_rng(sum(shape))
    w = rng.standard_normal(shape)
    x = F64(w, grad=True)
    out = sn(x)
    sigma, u, v, mat = np_sigma(w, dim, u0, v0, iters, 1e-12)
    np.testing.assert_allclose(out.numpy(), w / sigma, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(sn.weight_u.numpy(), u0)  # forward leaves u and v as they are
    # gradient: u and v are constants, dW = (G - sum(G * W) / sigma * u v^T) / sigma
    cot = rng.standard_normal(shape)
    (out * F64(cot)).sum().backward()
    g = np.moveaxis(cot, dim, 0).reshape(mat.shape)
    want = (g - (g * mat).sum() / sigma * np.outer(u, v)) / sigma
    want = np.moveaxis(want.reshape((shape[dim],) + tuple(np.delete(shape, dim))), 0, dim)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-8, atol=1e-10)


def test_spectral_norm_gradient_matches_finite_differences_once_converged():
    # with u, v at the singular vectors, sigma is stationary in them: the constant-u/v
    # gradient is the whole derivative, checked against central differences
    sn = nn.SpectralNorm([3, 4], power_iters=200, dtype="float64")
    w = np.random.default_rng(2).standard_normal((3, 4))
    cot = np.random.default_rng(3).standard_normal((3, 4))
    x = F64(w, grad=True)
    (sn(x) * F64(cot)).sum().backward()

    def f(a):
        with oar.no_grad():
            return float((sn(F64(a)) * F64(cot)).sum())
    num = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = 1e-6
        num[idx] = (f(w + e) - f(w - e)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-5, atol=1e-6)


def test_spectral_norm_bad_inputs():
    with pytest.raises(ValueError, match="SpectralNorm: dim"):
        nn.SpectralNorm([2, 3], dim=2)
    with pytest.raises(ValueError, match="SpectralNorm: weight_shape"):
        nn.SpectralNorm([2, 0])
    with pytest.raises(ValueError, match="SpectralNorm: power_iters"):
        nn.SpectralNorm([2, 3], power_iters=-1)
    with pytest.raises(ValueError, match=r"SpectralNorm: the weight must have shape \[2, 3\]"):
        nn.SpectralNorm([2, 3])(oar.ones([3, 2]))


def test_utils_spectral_norm_hook():
    oar.seed(2023)
    lin = nn.Linear(4, 3)
    w0 = lin.weight.numpy().copy()
    sn = nn.utils.spectral_norm(lin, n_power_iterations=2)
    assert sn is lin
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    assert sorted(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    np.testing.assert_array_equal(lin.weight.numpy(), w0)  # weight * 1.0 until a forward
    u, v = lin.weight_u.numpy().copy(), lin.weight_v.numpy().copy()
    assert u.shape == (3,) and v.shape == (4,)  # Linear: dim 1 (the output features) first
    np.testing.assert_allclose(np.linalg.norm(u), 1.0, rtol=1e-6)
    x = oar.rand([5, 4])
    y = lin(x)
    mat = w0.T.astype(np.float64)
    for _ in range(2):  # training: the buffers advance by n_power_iterations
        v = mat.T @ u
        v /= max(np.linalg.norm(v), 1e-12)
        u = mat @ v
        u /= max(np.linalg.norm(u), 1e-12)
    np.testing.assert_allclose(lin.weight_u.numpy(), u, rtol=1e-5, atol=1e-6)
    sigma = u @ mat @ v
    np.testing.assert_allclose(lin.weight.numpy(), w0 / sigma, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.numpy(), x.numpy() @ (w0 / sigma) + lin.bias.numpy(), rtol=1e-5,
                               atol=1e-5)
    y.sum().backward()
    assert lin.weight_orig.grad is not None
    lin.eval()  # eval: no power iteration
    before = lin.weight_u.numpy().copy()
    lin(x)
    np.testing.assert_array_equal(lin.weight_u.numpy(), before)
    with pytest.raises(RuntimeError, match="spectral_norm: parameter 'weight'"):
        nn.utils.spectral_norm(_twice())
    with pytest.raises(ValueError, match="spectral_norm: layer Linear has no parameter 'nope'"):
        nn.utils.spectral_norm(nn.Linear(2, 2), name="nope")
    with pytest.raises(ValueError, match="spectral_norm: n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="spectral_norm: dim"):
        nn.utils.spectral_norm(nn.Linear(2, 2), dim=5)


def _twice():
    layer = nn.Conv2D(2, 3, 2)
    nn.utils.spectral_norm(layer)
    layer.add_parameter("weight", layer.weight_orig)  # a second hook on the same name
    return layer


def test_sync_batch_norm_single_process_is_batch_norm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 2, 5)).astype(np.float32)
    oar.seed(1)
    bn = nn.BatchNorm2D(3, momentum=0.8)
    oar.seed(1)
    sbn = nn.SyncBatchNorm(3, momentum=0.8)
    np.testing.assert_array_equal(sbn(oar.to_tensor(x)).numpy(), bn(oar.to_tensor(x)).numpy())
    np.testing.assert_array_equal(sbn._mean.numpy(), bn._mean.numpy())
    assert repr(sbn) == "SyncBatchNorm(num_features=3, momentum=0.8, epsilon=1e-05)"
    model = nn.Sequential(nn.Conv2D(3, 5, 3), nn.Sequential(nn.BatchNorm2D(5), nn.ReLU()))
    bn_inner = model[1][0]
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert conv is model and isinstance(model[1][0], nn.SyncBatchNorm)
    assert model[1][0].weight is bn_inner.weight and model[1][0]._mean is bn_inner._mean
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1D(4)), nn.SyncBatchNorm)


def test_assign_initializer_takes_the_values_shape():
    for value in (np.array([2, 2]), [2, 2], oar.full([2], 2)):
        lin = nn.Linear(2, 2, weight_attr=oar.ParamAttr(initializer=nn.initializer.Assign(value)),
                        bias_attr=oar.ParamAttr(initializer=nn.initializer.Assign([2])))
        assert list(lin.weight.shape) == [2] and lin.weight.dtype.name == "float32"
        np.testing.assert_array_equal(lin(oar.ones([1, 2])).numpy(), [6.0])
    w = np.arange(6.0).reshape(2, 3)
    lin = nn.Linear(2, 3, weight_attr=oar.ParamAttr(initializer=nn.initializer.Assign(w)))
    np.testing.assert_array_equal(lin.weight.numpy(), w)
    with pytest.raises(TypeError, match="Assign: value"):
        nn.initializer.Assign("abc")
    with pytest.raises(TypeError, match="Assign: value must hold numbers"):
        nn.Linear(2, 2, weight_attr=oar.ParamAttr(initializer=nn.initializer.Assign([["a"]])))
    p = nn.Linear(2, 2).weight
    with pytest.raises(ValueError, match=r"Assign: value shape \[3\]"):
        nn.initializer.Assign([1, 2, 3])(p)
    # 1-D weights in F.linear: x's last dimension contracted (matmul's rule)
    x = np.random.default_rng(1).standard_normal((4, 3))
    wv = np.random.default_rng(2).standard_normal(3)
    np.testing.assert_allclose(F.linear(F64(x), F64(wv)).numpy(), x @ wv, rtol=1e-12)
    with pytest.raises(ValueError, match="linear: x's last dimension"):
        F.linear(F64(x), F64(wv[:2]))


def test_tensor_attribute_is_a_non_persistable_buffer():
    fc1 = nn.Linear(10, 3)
    fc1.register_buffer("buf_name_1", oar.to_tensor(np.array([0], np.float32)), persistable=True)
    fc2 = nn.Linear(3, 10)
    fc2.buf_name_2 = oar.to_tensor(np.array([1], np.float32))
    model = nn.Sequential(fc1, fc2)
    assert [n for n, _ in model.named_buffers()] == ["0.buf_name_1", "1.buf_name_2"]
    assert "0.buf_name_1" in model.state_dict() and "1.buf_name_2" not in model.state_dict()
    fc2.buf_name_2 = oar.to_tensor(np.array([5], np.float32))  # reassigning keeps it a buffer
    assert float(model.buffers()[1]) == 5.0
    with pytest.raises(TypeError, match="'buf_name_2' is a buffer"):
        fc2.buf_name_2 = 3  # a non-Tensor value for a buffer is refused, as before


def test_quant_stub_and_qat():
    from oar.nn.quant import Stub
    from oar.quantization import QAT, QuantConfig
    from oar.quantization.quanters import FakeQuanterWithAbsMaxObserver
    quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)

    class Model(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 6, 3, stride=1, padding=1)
            self.quant = Stub(quanter)

        def forward(self, x):
            return F.relu(self.quant(self.conv(x)))
    model = Model()
    x = oar.rand([2, 3, 4, 4])
    np.testing.assert_array_equal(Stub()(x).numpy(), x.numpy())
    q = QAT(QuantConfig(activation=quanter, weight=quanter)).quantize(model)
    assert type(q.quant).__name__ == "QuanterStub"
    assert "(_observer): FakeQuanterWithAbsMaxObserverLayer()" in repr(q)
    out = q(x)
    assert list(out.shape) == [2, 6, 4, 4]
    with pytest.raises(TypeError, match="Stub: observer"):
        Stub(observer=3)
    assert oar.nn.quant.Stub is Stub and oar.nn.quant.__all__[0] == "Stub"


def np_qdq(x, scale, bits):
    r = 2 ** (bits - 1) - 1
    s = np.maximum(scale, 1e-9)
    q = np.clip(x / s * r, -r, r)
    return np.where(q >= 0, np.floor(q + 0.5), -np.floor(-q + 0.5)) * s / r


def test_quant_layers_against_numpy():
    from oar.nn.quant import quant_layers as QL
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, (3, 4, 5))
    np.testing.assert_allclose(QL.FakeQuantAbsMax(quant_bits=4)(F64(x)).numpy(),
                               np_qdq(x, np.abs(x).max(), 4), rtol=1e-12)
    cw = QL.FakeQuantChannelWiseAbsMax(channel_num=4, quant_axis=1)(F64(x)).numpy()
    np.testing.assert_allclose(cw, np_qdq(x, np.abs(x).max(axis=(0, 2), keepdims=True), 8),
                               rtol=1e-12)
    ma = QL.FakeQuantMovingAverageAbsMax(moving_rate=0.5, dtype="float64")
    out1 = ma(F64(x)).numpy()
    state, accum = 0.5 * 1 + 1, 0.5 * 1 + np.abs(x).max()
    np.testing.assert_allclose(out1, np_qdq(x, accum / state, 8), rtol=1e-12)
    ma.eval()
    np.testing.assert_allclose(ma(F64(2 * x)).numpy(), np_qdq(2 * x, accum / state, 8), rtol=1e-12)
    stub = QL.QuantStub(moving_rate=0.5, dtype="float64")
    np.testing.assert_array_equal(stub(F64(x)).numpy(), x)
    np.testing.assert_allclose(stub._scale.numpy(), [np.abs(x).max()], rtol=1e-12)
    # straight-through gradient
    t = F64(x, grad=True)
    QL.FakeQuantAbsMax()(t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.ones_like(x))
    with pytest.raises(ValueError, match="FakeQuantAbsMax: quant_bits"):
        QL.FakeQuantAbsMax(quant_bits=1)
    with pytest.raises(ValueError, match="FakeQuantChannelWiseAbsMax: input must have 4"):
        QL.FakeQuantChannelWiseAbsMax(channel_num=4)(F64(x))
    with pytest.raises(ValueError, match="FakeQuantMovingAverageAbsMax: moving_rate"):
        QL.FakeQuantMovingAverageAbsMax(moving_rate=1.5)


@pytest.mark.parametrize("kind", ["conv", "convt", "linear"])
def test_quantized_layers(kind):
    from oar.nn.quant import quant_layers as QL
    oar.set_default_dtype("float64")
    try:
        layer = {"conv": lambda: nn.Conv2D(4, 6, 3, padding=1),
                 "convt": lambda: nn.Conv2DTranspose(4, 6, (3, 3), stride=2),
                 "linear": lambda: nn.Linear(4, 6)}[kind]()
    finally:
        oar.set_default_dtype("float32")
    wrap = {"conv": QL.QuantizedConv2D, "convt": QL.QuantizedConv2DTranspose,
            "linear": QL.QuantizedLinear}[kind]
    q = wrap(layer, weight_quantize_type="channel_wise_abs_max")
    x = np.random.default_rng(5).uniform(-1, 1, (2, 4, 5, 5) if kind != "linear" else (3, 4))
    w = layer.weight.numpy()
    axis = {"conv": 0, "convt": 1, "linear": 1}[kind]
    red = tuple(d for d in range(w.ndim) if d != axis)
    qw = np_qdq(w, np.abs(w).max(axis=red, keepdims=True), 8)
    qx = np_qdq(x, np.abs(x).max(), 8)
    with oar.no_grad():
        layer.weight.set_value(oar.to_tensor(qw))
        want = layer(F64(qx)).numpy()
        layer.weight.set_value(oar.to_tensor(w))
    got = q(F64(x))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    got.sum().backward()
    assert layer.weight.grad is not None  # the layer's own parameters train
    with pytest.raises(TypeError, match=f"{wrap.__name__}: layer must be"):
        wrap(nn.ReLU())
    with pytest.raises(ValueError, match="quantize type"):
        wrap(layer, activation_quantize_type="bogus")
