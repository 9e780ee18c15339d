"""nn.Layer API: registration, traversal, state_dict, hooks, to(dtype), repr, containers,
initializers, ParamAttr, Embedding."""

import math
import re

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.nn import initializer as I


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("running", oar.zeros([4]))
        self.register_buffer("scratch", oar.ones([2]), persistable=False)
        self.scale = self.create_parameter([1], default_initializer=I.Constant(2.0))

    def forward(self, x):
        return self.fc(x) * self.scale + self.running


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(("act", nn.ReLU()), ("out", nn.Linear(4, 2)))

    def forward(self, x):
        return self.head(self.block(x))


def test_named_parameters_sublayers_buffers_with_prefixes():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "block.scale",
        "block.fc.weight",
        "block.fc.bias",
        "head.out.weight",
        "head.out.bias",
    ]
    assert [n for n, _ in net.named_parameters(prefix="m")][0] == "m.block.scale"
    assert [n for n, _ in net.named_sublayers()] == [
        "block",
        "block.fc",
        "head",
        "head.act",
        "head.out",
    ]
    assert [n for n, _ in net.named_sublayers(prefix="m", include_self=True)][:2] == [
        "m",
        "m.block",
    ]
    assert [n for n, _ in net.named_buffers()] == ["block.running", "block.scratch"]
    assert len(net.parameters(include_sublayers=False)) == 0
    assert [type(c).__name__ for c in net.children()] == ["Block", "Sequential"]


def test_state_dict_order_and_non_persistable_buffers():
    net = Net()
    assert list(net.state_dict()) == [
        "block.scale",
        "block.running",
        "block.fc.weight",
        "block.fc.bias",
        "head.out.weight",
        "head.out.bias",
    ]
    assert list(net.state_dict(structured_name_prefix="net"))[0] == "net.block.scale"


def test_set_state_dict_strict_nonstrict_and_errors():
    a, b = Net(), Net()
    sd = {k: v.numpy() + 1 for k, v in a.state_dict().items()}
    missing, unexpected = b.set_state_dict(sd)
    assert missing == [] and unexpected == []
    np.testing.assert_array_equal(b.block.fc.weight.numpy(), sd["block.fc.weight"])
    partial = dict(sd)
    del partial["head.out.bias"]
    partial["extra"] = np.ones(1)
    with pytest.raises(
        KeyError, match=r"missing keys \['head.out.bias'\].*unexpected keys \['extra'\]"
    ):
        b.set_state_dict(partial, strict=True)
    with pytest.warns(UserWarning, match="missing keys"):  # the default, as Paddle's
        missing, unexpected = b.set_state_dict(partial)
    assert missing == ["head.out.bias"] and unexpected == ["extra"]
    bad = dict(sd)
    bad["block.fc.weight"] = np.ones([4, 3], np.float32)
    bad["block.fc.bias"] = sd["block.fc.bias"] + 1
    before = b.block.fc.bias.numpy().copy()
    with pytest.raises(ValueError, match=r"block.fc.weight.*\[4, 3\].*\[3, 4\]"):
        b.set_state_dict(bad, strict=True)
    np.testing.assert_array_equal(b.block.fc.bias.numpy(), before)  # nothing half-loaded
    # as Paddle's: the mismatched key is skipped with a warning, reported missing and
    # unexpected, and the rest loads (pretrained weights into a model with a new head)
    w_before = b.block.fc.weight.numpy().copy()
    with pytest.warns(UserWarning, match=r"skipped 'block.fc.weight': \[4, 3\] in the state dict, \[3, 4\]"):
        missing, unexpected = b.set_state_dict(bad)
    assert missing == ["block.fc.weight"] and unexpected == ["block.fc.weight"]
    np.testing.assert_array_equal(b.block.fc.weight.numpy(), w_before)
    np.testing.assert_array_equal(b.block.fc.bias.numpy(), bad["block.fc.bias"])
    a2 = Net()
    with pytest.warns(UserWarning):
        a2.set_state_dict(
            {a2.block.fc.weight.name: np.zeros([3, 4], np.float32)},
            use_structured_name=False,
            strict=False,
        )
    assert (a2.block.fc.weight.numpy() == 0).all()


def test_set_state_dict_keeps_parameter_identity():
    net = Net()
    w = net.block.fc.weight
    net.set_state_dict(Net().state_dict())
    assert net.block.fc.weight is w


def test_train_eval_apply_and_hooks():
    net = Net()
    net.eval()
    assert not any(sub.training for sub in net.sublayers(include_self=True))
    net.train()
    assert all(sub.training for sub in net.sublayers(include_self=True))
    seen = []
    net.apply(lambda layer: seen.append(type(layer).__name__))
    assert seen[-1] == "Net" and "Linear" in seen
    x = oar.ones([2, 3])
    calls = []
    h1 = net.register_forward_pre_hook(lambda layer, inp: (inp[0] * 0,))
    h2 = net.register_forward_post_hook(lambda layer, inp, out: calls.append(out.shape) or out + 1)
    out = net(x)
    assert calls == [[2, 2]]
    ref = net.forward(x * 0) + 1
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(net(x).numpy(), net.forward(x).numpy(), rtol=1e-6)


def test_to_dtype_casts_params_and_buffers():
    net = Net().to(dtype="float64")
    assert all(p.dtype == oar.float64 for p in net.parameters())
    assert net.block.running.dtype == oar.float64
    assert not net.block.fc.weight.stop_gradient
    out = net(oar.ones([1, 3], dtype="float64"))
    assert out.dtype == oar.float64
    with pytest.raises(ValueError, match="not available"):
        net.to("gpu:3")


def test_to_keeps_shared_parameters_shared():
    # Tied weights, and an RNN's flat names (weight_ih_l0) registered beside its cells'
    # parameters: each converted once, so they stay one parameter and train together.
    class Tied(nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.head = nn.Linear(10, 4)
            self.head.weight = self.emb.weight  # [10, 4]: x @ W for x [*, 10]

        def forward(self, ids):
            return self.head(nn.functional.one_hot(ids, 10)) + self.emb(ids)

    net = Tied()
    for convert in (lambda m: m.to(dtype="float64"), lambda m: m.float16(), lambda m: m.astype("float32")):
        convert(net)
        assert net.head.weight is net.emb.weight
        assert len(net.parameters()) == 2
    net(oar.to_tensor([1, 3])).sum().backward()
    assert net.emb.weight.grad is not None
    gru = nn.GRU(4, 5, num_layers=2).to(dtype="float64")
    assert len(gru.parameters()) == 8 and gru.weight_hh_l1 is gru[1].cell.weight_hh
    out, _ = gru(oar.ones([2, 3, 4], dtype="float64"))
    out.sum().backward()
    assert all(p.grad is not None for p in gru.parameters())


def test_repr_lists_sublayers_as_paddle():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    assert repr(net) == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, dtype=float32)\n  (1): ReLU()\n)"
    )


def test_registration_errors():
    net = Net()
    with pytest.raises(TypeError, match="parameter"):
        net.block.scale = np.ones(1)
    with pytest.raises(KeyError, match="'.'"):
        net.add_parameter("a.b", net.block.scale)
    with pytest.raises(TypeError, match="Parameter"):
        net.add_parameter("w", oar.ones([1]))
    with pytest.raises(TypeError, match="Tensor"):
        net.register_buffer("b", np.ones(1))
    net.block.scale = None
    assert "block.scale" not in net.state_dict()


def test_parameter_names_unique_and_paramattr():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    assert a.weight.name.endswith(".w_0") and a.bias.name.endswith(".b_0")
    assert a.weight.name != b.weight.name
    attr = oar.ParamAttr(
        name="my_w", initializer=I.Constant(0.5), learning_rate=0.1, trainable=False
    )
    lin = nn.Linear(2, 3, weight_attr=attr, bias_attr=False)
    assert lin.weight.name == "my_w" and lin.bias is None
    assert (lin.weight.numpy() == 0.5).all() and lin.weight.stop_gradient
    assert lin.weight.optimize_attr["learning_rate"] == 0.1
    p = oar.create_parameter([2, 3], "float32", default_initializer=I.Constant(1.0))
    assert p.shape == [2, 3] and not p.stop_gradient
    with pytest.raises(ValueError, match="negative"):
        oar.create_parameter([-1], "float32")
    with pytest.raises(TypeError, match="float"):
        oar.create_parameter([1], "int64")


def test_containers():
    ll = nn.LayerList([nn.Linear(1, 1) for _ in range(3)])
    ll.insert(1, nn.ReLU())
    assert [type(x).__name__ for x in ll] == ["Linear", "ReLU", "Linear", "Linear"]
    del ll[0]
    assert list(ll._sub_layers) == ["0", "1", "2"] and len(ll.parameters()) == 4
    with pytest.raises(IndexError):
        ll[7]
    ld = nn.LayerDict({"a": nn.Linear(1, 2)})
    ld["b"] = nn.ReLU()
    assert list(ld.keys()) == ["a", "b"] and "a" in ld and len(ld.parameters()) == 2
    ld.pop("a")
    assert len(ld) == 1
    pl = nn.ParameterList([oar.create_parameter([2], "float32") for _ in range(2)])
    assert len(pl) == 2 and len(pl.parameters()) == 2
    pd = nn.ParameterDict({"x": oar.create_parameter([1], "float32")})
    assert list(pd.state_dict()) == ["x"]
    seq = nn.Sequential(("a", nn.Linear(1, 2)), ("b", nn.ReLU()))
    assert isinstance(seq["b"], nn.ReLU) and isinstance(seq[-1], nn.ReLU)
    assert list(seq[:1]._sub_layers) == ["a"]


def test_truncated_normal_and_orthogonal_and_dirac():
    oar.seed(0)
    w = I.TruncatedNormal(mean=1.0, std=2.0, a=-1.0, b=4.0)._make([20000], oar.float32).numpy()
    assert w.min() >= -1.0 and w.max() <= 4.0
    assert abs(w.mean() - 1.27) < 0.05  # mean of N(1, 2) truncated to [-1, 4]
    q = I.Orthogonal(gain=2.0)._make([4, 6], oar.float64).numpy()
    np.testing.assert_allclose(q @ q.T, 4.0 * np.eye(4), atol=1e-10)
    q = I.Orthogonal()._make([6, 2, 2], oar.float32).numpy().reshape(6, 4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    d = I.Dirac()._make([2, 3, 3, 3], oar.float32).numpy()
    assert d.sum() == 2 and d[0, 0, 1, 1] == 1 and d[1, 1, 1, 1] == 1
    b = I.Bilinear()._make([1, 1, 4, 4], oar.float32).numpy()[0, 0]
    np.testing.assert_allclose(b, np.outer([0.25, 0.75, 0.75, 0.25], [0.25, 0.75, 0.75, 0.25]))
    assert I.calculate_gain("relu") == pytest.approx(math.sqrt(2))


def test_embedding_forward_backward_padding():
    oar.seed(0)
    emb = nn.Embedding(5, 3, padding_idx=-1)
    assert emb.weight.shape == [5, 3] and (emb.weight.numpy()[4] == 0).all()
    ids = oar.to_tensor(np.array([[0, 4, 2], [2, 2, 1]]))
    out = emb(ids)
    w = emb.weight.numpy()
    ref = w[ids.numpy()]
    ref[ids.numpy() == 4] = 0
    np.testing.assert_allclose(out.numpy(), ref)
    (out * oar.to_tensor(np.arange(18, dtype=np.float32).reshape(2, 3, 3))).sum().backward()
    g = emb.weight.grad.numpy()
    coef = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    exp = np.zeros([5, 3], np.float32)
    for (i, j), v in np.ndenumerate(ids.numpy()):
        if v != 4:
            exp[v] += coef[i, j]
    np.testing.assert_allclose(g, exp)
    with pytest.raises(IndexError, match="embedding"):
        emb(oar.to_tensor(np.array([5])))
    with pytest.raises(TypeError, match="int32 or int64"):
        emb(oar.ones([2]))
    assert repr(emb) == "Embedding(5, 3, padding_idx=4)"


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_embedding_and_one_hot_check_every_id(dtype):
    """The ids' range is checked in one pass (C++) on contiguous CPU ids, through NumPy on
    strided ones: each side's first bad value is named, valid ids of every layout pass."""
    emb = nn.Embedding(6, 2)
    ids = np.array([[0, 5, 3], [2, 4, 1]], dtype)
    for t in (oar.to_tensor(ids), oar.to_tensor(ids.T.copy()).T, oar.to_tensor(ids)[:, 1:]):
        np.testing.assert_allclose(emb(t).numpy(), emb.weight.numpy()[t.numpy()])
        np.testing.assert_allclose(nn.functional.one_hot(t, 6).numpy(), np.eye(6)[t.numpy()])
    for bad, value in (([[0, 6, 3], [2, 4, 1]], 6), ([[0, 5, -1], [9, 4, 1]], -1)):
        for t in (oar.to_tensor(np.array(bad, dtype)), oar.to_tensor(np.array(bad, dtype).T.copy()).T):
            with pytest.raises(IndexError, match=rf"embedding: x value {value} is out of range \[0, 6\)"):
                emb(t)
            with pytest.raises(IndexError, match=rf"one_hot: x value {value} is out of range \[0, 6\)"):
                nn.functional.one_hot(t, 6)
    assert emb(oar.to_tensor(np.zeros((0, 3), dtype))).shape == [0, 3, 2]


def test_parameters_follow_default_dtype():
    oar.set_default_dtype("float64")
    try:
        assert nn.Linear(2, 3).weight.dtype == oar.float64
        assert Block().scale.dtype == oar.float64
        assert nn.Linear(2, 3).to(dtype="float32").weight.dtype == oar.float32
    finally:
        oar.set_default_dtype("float32")
    assert nn.Linear(2, 3).weight.dtype == oar.float32
    assert nn.Layer(dtype="float16").create_parameter([2]).dtype == oar.float16


def test_full_names_follow_paddle_snake_case():
    from oar.nn.layer import _snake

    assert _snake("Conv2D") == "conv2d" and _snake("MaxPool2D") == "max_pool2d"
    assert _snake("ReLU") == "re_lu" and _snake("BatchNorm2D") == "batch_norm2d"
    assert _snake("Linear") == "linear" and _snake("LSTMCell") == "lstm_cell"
    assert re.fullmatch(r"linear_\d+", nn.Linear(1, 1).full_name())
