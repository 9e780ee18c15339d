"""oar.onnx.export: the written file is loaded by ONNX Runtime and must give the eager
outputs, at two batch sizes through one file (the batch dim is symbolic)."""
import os

import numpy as np
import oar
import oar.nn.functional as F
import pytest
from oar import nn
from oar.static import InputSpec

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-5, 1e-5


def _session(path):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def _check(net, spec, feeds_for, tmp_path, tag, batches=(1, 3), rtol=RTOL, atol=ATOL, **kw):
    """Exports, checks the model and its symbolic batch dim, compares with eager."""
    net.eval()
    path = oar.onnx.export(net, str(tmp_path / tag), input_spec=spec, **kw)
    assert path == str(tmp_path / tag) + ".onnx" and os.path.exists(path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == [s.name for s in spec]
    for inp, s in zip(model.graph.input, spec):
        dims = inp.type.tensor_type.shape.dim
        for d, want in zip(dims, s.shape):
            if want == -1:
                assert d.dim_param and not d.HasField("dim_value")
            else:
                assert d.dim_value == want
    sess = _session(path)
    rng = np.random.default_rng(7)
    for n in batches:
        feeds = feeds_for(rng, n)
        ref = net(*[oar.to_tensor(v) for v in feeds.values()])
        ref = [ref] if not isinstance(ref, (list, tuple)) else list(ref)
        got = sess.run(None, feeds)
        assert len(got) == len(ref)
        for r, g in zip(ref, got):
            r = r.numpy()
            assert r.shape == g.shape and r.dtype == g.dtype
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return model


def _randn(*shape):
    return lambda rng, n: rng.standard_normal([n, *shape]).astype("float32")


def _single(name, make):
    return lambda rng, n: {name: make(rng, n)}


def _op_types(model):
    return {n.op_type for n in model.graph.node}


# ------------------------------------------------------------------ the model zoo
def test_mlp(tmp_path):
    oar.seed(1)
    net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(), nn.Dropout(0.3),
                        nn.Linear(16, 4), nn.Softmax(-1))
    m = _check(net, [InputSpec([None, 8], "float32", "x")], _single("x", _randn(8)), tmp_path, "mlp",
               batches=(1, 5))
    # weights travel as initializers, the dropout of eval mode is gone
    assert len(m.graph.initializer) >= 6 and "Dropout" not in _op_types(m)


def test_lenet(tmp_path):
    oar.seed(2)
    _check(oar.vision.models.LeNet(), [InputSpec([None, 1, 28, 28], "float32", "image")],
           _single("image", _randn(1, 28, 28)), tmp_path, "lenet")


def test_resnet18(tmp_path):
    oar.seed(3)
    net = oar.vision.models.resnet18(num_classes=10)
    rng = np.random.default_rng(0)
    for layer in net.sublayers():   # non-trivial running statistics for the inference batch norm
        if isinstance(layer, nn.BatchNorm2D):
            c = layer._mean.shape[0]
            layer._mean.set_value(oar.to_tensor(rng.normal(0, 0.1, c).astype("float32")))
            layer._variance.set_value(oar.to_tensor(rng.uniform(0.5, 1.5, c).astype("float32")))
    m = _check(net, [InputSpec([None, 3, 32, 32], "float32", "x")], _single("x", _randn(3, 32, 32)),
               tmp_path, "resnet18", batches=(1, 2), rtol=1e-4, atol=1e-4)
    assert {"Conv", "BatchNormalization", "MaxPool", "GlobalAveragePool"} <= _op_types(m)


def test_transformer_encoder(tmp_path):
    oar.seed(4)
    net = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32), 2)
    m = _check(net, [InputSpec([None, 5, 16], "float32", "src")], _single("src", _randn(5, 16)),
               tmp_path, "encoder")
    assert "LayerNormalization" in _op_types(m) and "Softmax" in _op_types(m)


def test_transformer_encoder_mask_gelu_prenorm(tmp_path):
    oar.seed(5)

    class Enc(nn.Layer):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 4, 32, activation="gelu", normalize_before=True)
            self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))

        def forward(self, x, mask):
            return self.enc(x, src_mask=mask)

    def feeds(rng, n):
        mask = rng.random([n, 1, 5, 5]) > 0.3
        mask[..., 0] = True
        return {"x": rng.standard_normal([n, 5, 16]).astype("float32"), "mask": mask}

    _check(Enc(), [InputSpec([None, 5, 16], "float32", "x"), InputSpec([None, 1, 5, 5], "bool", "mask")],
           feeds, tmp_path, "encoder_mask")


# ------------------------------------------------------------------ op coverage
class _Ops(nn.Layer):
    """Most translation rules in one layer: grouped/strided/dilated conv with asymmetric
    padding, batch norm, the pools (ceil mode, exclusive or not, adaptive), reshape with 0
    and -1, flatten, transpose, concat, slice, squeeze/unsqueeze, matmul with transpose
    flags, softmax/log_softmax, gather, layer norm, dropout, both gelus, where, reductions,
    cast, scale, causal attention."""

    def __init__(self):
        super().__init__()
        self.conv_g = nn.Conv2D(4, 8, 3, stride=2, padding=[1, 0], groups=2)
        self.conv_d = nn.Conv2D(8, 8, 3, padding=2, dilation=2, groups=8)
        self.bn = nn.BatchNorm2D(8)
        self.ln = nn.LayerNorm([8])
        self.drop = nn.Dropout(0.5)
        self.w = self.create_parameter([6, 8])
        self.table = self.create_parameter([10, 8])
        rng = np.random.default_rng(3)
        self.bn._mean.set_value(oar.to_tensor(rng.standard_normal(8).astype("float32")))
        self.bn._variance.set_value(oar.to_tensor(rng.uniform(0.5, 2, 8).astype("float32")))

    def forward(self, x, ids, q):
        y = self.bn(self.conv_d(self.conv_g(x)))                      # [N, 8, 4, 3]
        y = F.sigmoid(y) * 2.0 - F.tanh(y) / (y.abs() + 1.0)
        a = F.avg_pool2d(y, 2, stride=1, padding=1, exclusive=False)
        b = F.avg_pool2d(y, 3, stride=2, padding=1)
        m = F.max_pool2d(y, 3, stride=2, padding=1, ceil_mode=True)  # ceil mode adds a window
        ad = F.adaptive_avg_pool2d(x, [2, 2])
        f = oar.concat([a.flatten(1), b.flatten(1), m.flatten(1), ad.flatten(1)], axis=1)
        r = f.reshape([0, -1, 2]).transpose([0, 2, 1])
        s = r[:, :, 1:5].unsqueeze(1).squeeze(1)
        t = oar.matmul(s, self.w[:4])
        t = oar.matmul(t, self.w, transpose_y=True)                  # [N, 2, 6]
        sm = F.softmax(t, axis=-1) + F.log_softmax(t, axis=1)
        e = oar.gather(self.table, ids)                               # [N, 8]
        e = self.drop(self.ln(e)) + F.gelu(e, approximate=True) + F.gelu(e)
        e = oar.where(e > 0.1, e, e * 0.5)
        ms = sm.mean(axis=-1) + sm.sum(axis=[1, 2], keepdim=True).squeeze(-1)
        c = (ids.astype("float32") * 2.5).unsqueeze(-1)
        attn = F.scaled_dot_product_attention(q, q * 0.5, q, is_causal=True)
        return ms, e + c, attn, oar.scale(ms, 3.0, 1.0, bias_after_scale=False)


_OPS_SPEC = [InputSpec([None, 4, 8, 8], "float32", "x"), InputSpec([None], "int64", "ids"),
             InputSpec([None, 6, 2, 4], "float32", "q")]


def _ops_feeds(rng, n):
    return {"x": rng.standard_normal([n, 4, 8, 8]).astype("float32"),
            "ids": rng.integers(0, 10, [n]).astype("int64"),
            "q": rng.standard_normal([n, 6, 2, 4]).astype("float32")}


@pytest.mark.parametrize("opset", [14, 17, 18])
def test_op_coverage(tmp_path, opset):
    # 14: layer norm decomposed; 17: LayerNormalization; 18: reduction axes as inputs
    oar.seed(6)
    m = _check(_Ops(), _OPS_SPEC, _ops_feeds, tmp_path, f"ops{opset}", opset_version=opset)
    assert m.opset_import[0].version == opset
    assert ("LayerNormalization" in _op_types(m)) == (opset >= 17)


class _More(nn.Layer):
    """Activations, comparisons and the remaining manipulation, reduction and nn rules."""

    def __init__(self):
        super().__init__()
        self.convt = nn.Conv2DTranspose(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.gn = nn.GroupNorm(2, 4)
        self.conv_nhwc = nn.Conv2D(3, 2, 3, padding=1, data_format="NHWC")
        self.bn_nhwc = nn.BatchNorm2D(2, data_format="NHWC")

    def forward(self, x, img, q, k):
        acts = [F.leaky_relu(x, 0.2), F.elu(x, 0.7), F.selu(x), F.hardsigmoid(x), F.hardswish(x), F.relu6(x),
                F.hardtanh(x, -0.5, 0.7), oar.clip(x, -1.0, 2.0), F.softplus(x, 2.0, 5.0), F.log_sigmoid(x),
                F.mish(x), F.silu(x), oar.pow(x.abs(), 1.7), oar.rsqrt(x.abs() + 1), oar.square(x),
                oar.log1p(x.abs()), oar.expm1(x), oar.sqrt(x.abs()), oar.floor(x) + oar.ceil(x), oar.erf(x),
                oar.maximum(x, x * 0.5) + oar.minimum(x, oar.zeros([6])), oar.pow(x.abs() + 1, x.abs() * 0.1),
                oar.flip(x, [1]), oar.full_like(x, 2.5), x + oar.arange(6).astype("float32"),
                oar.tril(x, 1) + oar.triu(x, -1), oar.cumsum(x, axis=1), oar.index_select(x, oar.to_tensor([0, 2, 2, 1, 5, 4]), axis=1)]
        cmp = (((x > 0) & (x < 1)) | (x == 0) | ~(x >= -1) | (x != 2) ^ (x <= 3)).astype("float32")
        parts = oar.split(x, [2, -1, 3], axis=1)
        manip = [oar.stack([x, x * 2], axis=1).flatten(1), x.unsqueeze(1).expand([-1, 2, -1]).flatten(1),
                 oar.tile(x, [1, 2]), parts[0] * parts[1][:, :1], x[:, 2:3]]
        reds = [x.max(1), x.min(1), x.prod(-1), oar.logsumexp(x, 1), x.var(1), x.std(1, unbiased=False),
                (x - x.min(0, keepdim=True)).sum(1)]
        idx = [oar.argmax(x, axis=1), oar.argmin(x, axis=-1)]
        y = self.gn(self.convt(img))                               # NCHW [N, 4, 8, 8]
        z = self.bn_nhwc(self.conv_nhwc(y.transpose([0, 2, 3, 1])[:, :, :, :3]))   # NHWC
        z = F.max_pool2d(z, 2, 2, data_format="NHWC").flatten(1)
        att = F.scaled_dot_product_attention(q, k, k * 2.0)       # 4 query heads over 2 key heads
        return (oar.concat(acts, axis=1), cmp, oar.concat(manip, axis=1), oar.stack(reds, axis=1), idx[0], idx[1],
                y.flatten(2), z, att)


def test_op_coverage_more(tmp_path):
    oar.seed(8)
    spec = [InputSpec([None, 6], "float32", "x"), InputSpec([None, 2, 4, 4], "float32", "img"),
            InputSpec([None, 5, 4, 8], "float32", "q"), InputSpec([None, 7, 2, 8], "float32", "k")]

    def feeds(rng, n):
        return {"x": (rng.standard_normal([n, 6]) * 3).astype("float32"),
                "img": rng.standard_normal([n, 2, 4, 4]).astype("float32"),
                "q": rng.standard_normal([n, 5, 4, 8]).astype("float32"),
                "k": rng.standard_normal([n, 7, 2, 8]).astype("float32")}

    m = _check(_More(), spec, feeds, tmp_path, "more", rtol=1e-5, atol=2e-5)
    assert {"ConvTranspose", "Trilu", "CumSum", "ArgMax", "ArgMin", "Split", "Expand", "Tile", "Gather",
            "ReduceProd", "ReduceLogSumExp", "LeakyRelu", "Selu", "HardSigmoid", "Softplus"} <= _op_types(m)


def test_cond_becomes_if(tmp_path):
    class Branchy(nn.Layer):
        def forward(self, x):
            return oar.static.nn.cond(x.mean() > 0, lambda: F.relu(x) * 2.0, lambda: x - 1.0) + 1.0

    net = Branchy()
    path = oar.onnx.export(net, str(tmp_path / "cond"), input_spec=[InputSpec([None, 3], "float32", "x")])
    assert "If" in _op_types(onnx.load(path))
    sess = _session(path)
    for x in (np.abs(np.random.default_rng(0).standard_normal([2, 3])).astype("float32"),
              -np.ones([4, 3], "float32")):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], net(oar.to_tensor(x)).numpy(), rtol=RTOL)


def test_to_static_function_and_output_names(tmp_path):
    net = nn.Linear(4, 3)
    st = oar.jit.to_static(net, input_spec=[InputSpec([None, 4], "float32", "feat")])
    x = np.random.default_rng(1).standard_normal([2, 4]).astype("float32")
    st(oar.to_tensor(x))
    # no input_spec here: the to_static layer's own one is used
    path = oar.onnx.export(st, str(tmp_path / "sub" / "linear"), output_names=["logits"])
    sess = _session(path)
    assert [o.name for o in sess.get_outputs()] == ["logits"]
    assert [i.name for i in sess.get_inputs()] == ["feat"]
    np.testing.assert_allclose(sess.run(None, {"feat": x})[0], st(oar.to_tensor(x)).numpy(), rtol=RTOL,
                               atol=ATOL)


# ------------------------------------------------------------------ errors
def test_unsupported_op_names_it_and_writes_nothing(tmp_path):
    class Scan(nn.Layer):
        def forward(self, x):
            return oar.cumprod(x, dim=-1)

    with pytest.raises(NotImplementedError, match="pd_op.cumprod"):
        oar.onnx.export(Scan(), str(tmp_path / "scan"), input_spec=[InputSpec([None, 3], "float32", "x")])
    assert not os.path.exists(tmp_path / "scan.onnx")


def test_unsupported_usage_is_an_error_not_a_wrong_file(tmp_path):
    # adaptive pooling over dynamic spatial sizes has bins that ONNX pools cannot express
    class Pool(nn.Layer):
        def forward(self, x):
            return F.adaptive_avg_pool2d(x, [2, 2])

    with pytest.raises(NotImplementedError, match="pd_op.avg_pool2d.*adaptive"):
        oar.onnx.export(Pool(), str(tmp_path / "pool"), input_spec=[InputSpec([None, 3, None, None], "float32", "x")])
    # training-mode batch norm uses batch statistics
    net = nn.Sequential(nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2))
    net.train()
    with pytest.raises(NotImplementedError, match="eval"):
        oar.onnx.export(net, str(tmp_path / "bn"), input_spec=[InputSpec([None, 1, 5, 5], "float32", "x")])
    assert not os.path.exists(tmp_path / "bn.onnx")


def test_bad_arguments(tmp_path):
    spec = [InputSpec([None, 4], "float32", "x")]
    net = nn.Linear(4, 2)
    with pytest.raises(TypeError, match="nn.Layer"):
        oar.onnx.export(lambda x: x, str(tmp_path / "f"), input_spec=spec)
    for bad in ("", str(tmp_path) + os.sep, 3):
        with pytest.raises(ValueError, match="prefix"):
            oar.onnx.export(net, bad, input_spec=spec)
    with pytest.raises(ValueError, match="opset_version"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=spec, opset_version=9)
    with pytest.raises(TypeError, match="opset_version"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=spec, opset_version="17")
    with pytest.raises(TypeError, match="input_spec"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=InputSpec([None, 4], "float32", "x"))
    with pytest.raises(TypeError, match="InputSpec"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=[[None, 4]])
    with pytest.raises(ValueError, match="input_spec"):
        oar.onnx.export(nn.Linear(4, 2), str(tmp_path / "m"))   # nothing says what the input is
    with pytest.raises(TypeError, match="unexpected keyword"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=spec, dynamic_axes={"x": [0]})
    with pytest.raises(ValueError, match="output_names"):
        oar.onnx.export(net, str(tmp_path / "m"), input_spec=spec, output_names=["a", "b"])
    assert not os.path.exists(tmp_path / "m.onnx")
