"""oar.amp: the autocast dispatch layer (white/black/gray ops, O1/O2, custom lists,
per-thread state), GradScaler's dynamic loss scaling, decorate with master weights."""
import threading

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import amp


def _randn(*shape, dtype="float32", grad=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return oar.to_tensor(a, stop_gradient=not grad)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_white_list_runs_low_precision(dtype):
    x, w = _randn(4, 8), _randn(8, 3, seed=1)
    ref = (x.numpy().astype(np.float64) @ w.numpy())
    with amp.auto_cast(dtype=dtype):
        y = oar.matmul(x, w)
        y2 = x @ w
    assert y.dtype.name == dtype and y2.dtype.name == dtype
    np.testing.assert_allclose(y.astype("float32").numpy(), ref, rtol=3e-2, atol=5e-2)
    assert oar.matmul(x, w).dtype.name == "float32"  # off outside the block


def test_black_list_runs_float32():
    x = _randn(4, 5).astype("bfloat16")
    label = oar.to_tensor(np.array([0, 1, 2, 3]))
    with amp.auto_cast(dtype="bfloat16"):
        for out in (oar.exp(x), oar.log(x.abs() + 1.0), F.softmax(x), x.mean(), x.sum(),
                    F.cross_entropy(x, label)):
            assert out.dtype.name == "float32"
        # gray ops: one low-precision input stays low; a float32 input makes it float32
        assert F.relu(x).dtype.name == "bfloat16"
        assert (x + _randn(4, 5)).dtype.name == "float32"
        # float64 is never touched
        d = _randn(3, 3, dtype="float64")
        assert oar.matmul(d, d).dtype.name == "float64"


def test_gradients_reach_float32_parameters():
    x = _randn(6, 8)
    w = _randn(8, 4, grad=True, seed=2)
    b = _randn(4, grad=True, seed=3)
    with amp.auto_cast(dtype="bfloat16"):
        y = F.linear(x, w, b)
        loss = F.softmax(y).sum(axis=-1).mean() + (y * y).mean()
    assert loss.dtype.name == "float32"
    loss.backward()
    assert w.grad.dtype.name == "float32" and b.grad.dtype.name == "float32"
    # against the float32 gradient
    w32, b32 = _randn(8, 4, grad=True, seed=2), _randn(4, grad=True, seed=3)
    y32 = F.linear(x, w32, b32)
    (F.softmax(y32).sum(axis=-1).mean() + (y32 * y32).mean()).backward()
    np.testing.assert_allclose(w.grad.numpy(), w32.grad.numpy(), rtol=5e-2, atol=5e-2)
    np.testing.assert_allclose(b.grad.numpy(), b32.grad.numpy(), rtol=5e-2, atol=5e-2)


def test_custom_lists_and_errors():
    x = _randn(3, 3)
    with amp.auto_cast(custom_black_list=["matmul"], dtype="bfloat16"):
        assert oar.matmul(x, x).dtype.name == "float32"
    with amp.auto_cast(custom_white_list=["exp"], dtype="bfloat16"):
        assert oar.exp(x).dtype.name == "bfloat16"
    with pytest.raises(ValueError, match="both"):
        with amp.auto_cast(custom_white_list=["exp"], custom_black_list=["exp"]):
            pass
    with pytest.raises(ValueError, match="level"):
        with amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="dtype"):
        with amp.auto_cast(dtype="float32"):
            pass


def test_enable_false_nesting_and_restore():
    x = _randn(3, 3)
    with amp.auto_cast(enable=False):
        assert oar.matmul(x, x).dtype.name == "float32"
    with amp.auto_cast(dtype="bfloat16"):
        with amp.auto_cast(enable=False):
            assert oar.matmul(x, x).dtype.name == "float32"
            assert not amp.is_auto_cast_enabled()
        assert oar.matmul(x, x).dtype.name == "bfloat16"
        with amp.auto_cast(dtype="float16"):
            assert oar.matmul(x, x).dtype.name == "float16"
        assert oar.matmul(x, x).dtype.name == "bfloat16"
    with pytest.raises(KeyError):
        with amp.auto_cast(dtype="bfloat16"):
            raise KeyError("boom")
    assert not amp.is_auto_cast_enabled()
    assert oar.matmul(x, x).dtype.name == "float32"


def test_o2_casts_gray_ops():
    x = _randn(3, 3)
    with amp.auto_cast(level="O2", dtype="bfloat16"):
        assert (x + x).dtype.name == "bfloat16"
        assert F.relu(x).dtype.name == "bfloat16"
        assert oar.exp(x).dtype.name == "float32"
        assert x.sum().dtype.name == "float32"


def test_state_is_per_thread():
    x = _randn(3, 3)
    seen = []
    with amp.auto_cast(dtype="bfloat16"):
        t = threading.Thread(target=lambda: seen.append(oar.matmul(x, x).dtype.name))
        t.start()
        t.join()
        assert oar.matmul(x, x).dtype.name == "bfloat16"
    assert seen == ["float32"]


def test_supported_and_lists():
    assert amp.is_bfloat16_supported()  # is_float16_supported: test_amp_debugging.py
    assert "matmul" in amp.white_list()["bfloat16"]["O1"]
    assert {"exp", "softmax", "cross_entropy", "mean", "sum", "layer_norm"} <= \
        amp.black_list()["float16"]["O1"]


# ---------------------------------------------------------------- GradScaler
def _sgd_setup(value=1.0):
    p = oar.nn.Parameter(oar.to_tensor(np.full([3], value, np.float32)))
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=[p])
    return p, opt


def test_scaler_scales_and_unscales():
    p, opt = _sgd_setup()
    scaler = amp.GradScaler(init_loss_scaling=8.0)
    loss = (p * p).sum()
    scaled = scaler.scale(loss)
    assert float(scaled) == pytest.approx(8.0 * float(loss))
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), 16.0)  # 8 * 2p
    scaler.minimize(opt, scaled)
    np.testing.assert_allclose(p.numpy(), 1.0 - 0.1 * 2.0, rtol=1e-6)  # unscaled grad used


def test_scaler_skips_inf_and_adjusts_scale():
    p, opt = _sgd_setup()
    scaler = amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2,
                            decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)
    for bad in (np.inf, np.nan):
        before = p.numpy().copy()
        p.grad = oar.to_tensor(np.array([1.0, bad, 1.0], np.float32))
        scaler.minimize(opt, None)
        np.testing.assert_array_equal(p.numpy(), before)  # step skipped
        opt.clear_grad()
    assert scaler.get_loss_scaling().numpy()[0] == 256.0  # halved twice
    # two finite steps double it
    for _ in range(2):
        p.grad = oar.to_tensor(np.ones([3], np.float32))
        scaler.minimize(opt, None)
        opt.clear_grad()
    assert scaler.get_loss_scaling().numpy()[0] == 512.0
    assert scaler.state_dict()["incr_count"] == 0


def test_scaler_decr_every_n_and_floor():
    p, opt = _sgd_setup()
    scaler = amp.GradScaler(init_loss_scaling=2.0, decr_every_n_nan_or_inf=2)
    scales = []
    for _ in range(6):
        p.grad = oar.to_tensor(np.array([np.inf, 0, 0], np.float32))
        scaler.step(opt)
        scaler.update()
        scales.append(float(scaler.get_loss_scaling().numpy()[0]))
    assert scales == [2.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # every 2nd inf halves; never below 1
    # a finite step in between resets the inf counter
    scaler = amp.GradScaler(init_loss_scaling=16.0, decr_every_n_nan_or_inf=2)
    for g in (np.inf, 1.0, np.inf, np.inf):
        p.grad = oar.to_tensor(np.array([g, 0, 0], np.float32))
        scaler.step(opt)
        scaler.update()
    assert float(scaler.get_loss_scaling().numpy()[0]) == 8.0


def test_scaler_unscale_then_step_and_errors():
    p, opt = _sgd_setup()
    scaler = amp.GradScaler(init_loss_scaling=4.0)
    p.grad = oar.to_tensor(np.full([3], 8.0, np.float32))
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), 2.0)
    with pytest.raises(RuntimeError, match="unscale_"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step"):
        scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.numpy(), 1.0 - 0.2, rtol=1e-6)
    for kw in ({"incr_ratio": 1.0}, {"decr_ratio": 1.5}, {"init_loss_scaling": -1.0},
               {"incr_every_n_steps": 0}):
        with pytest.raises(ValueError):
            amp.GradScaler(**kw)
    with pytest.raises(TypeError):
        scaler.scale(3.0)


def test_scaler_state_dict_and_disabled():
    s = amp.GradScaler(init_loss_scaling=64.0, incr_every_n_steps=5)
    s._incr_count = 3
    st = s.state_dict()
    t = amp.GradScaler()
    t.load_state_dict(st)
    assert float(t.get_loss_scaling().numpy()[0]) == 64.0
    assert t.get_incr_every_n_steps() == 5 and t.state_dict()["incr_count"] == 3
    off = amp.GradScaler(enable=False)
    assert off.state_dict() == {}
    x = _randn(2)
    assert off.scale(x) is x
    p, opt = _sgd_setup()
    p.grad = oar.to_tensor(np.ones([3], np.float32))
    off.minimize(opt, None)
    np.testing.assert_allclose(p.numpy(), 0.9, rtol=1e-6)


# ---------------------------------------------------------------- decorate
class _Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = oar.nn.Linear(4, 8)
        self.fc2 = oar.nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def test_decorate_o1_is_identity():
    net = _Net()
    opt = oar.optimizer.SGD(parameters=net.parameters())
    m, o = amp.decorate(net, opt, level="O1")
    assert m is net and o is opt
    assert all(p.dtype.name == "float32" for p in net.parameters())


def test_decorate_o2_master_weights_train():
    oar.seed(0)
    net = _Net()
    masters = {n: p for n, p in net.named_parameters()}
    opt = oar.optimizer.SGD(learning_rate=0.05, parameters=net.parameters())
    net, opt = amp.decorate(net, opt, level="O2", dtype="bfloat16")
    assert all(p.dtype.name == "bfloat16" for p in net.parameters())
    # the optimizer updates the float32 masters
    opt_params = [p for g in opt._param_groups for p in g["params"]]
    assert all(p.dtype.name == "float32" for p in opt_params)
    assert {id(p) for p in opt_params} == {id(p) for p in masters.values()}
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((32, 4)).astype(np.float32))
    y = oar.to_tensor((rng.standard_normal((32, 1)) * 0.1).astype(np.float32))
    scaler = amp.GradScaler(init_loss_scaling=128.0)
    losses = []
    for _ in range(30):
        with amp.auto_cast(level="O2", dtype="bfloat16"):
            out = net(x)
            loss = F.mse_loss(out.astype("float32"), y)
        scaler.scale(loss).backward()
        scaler.minimize(opt, loss)
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    for name, p in net.named_parameters():
        m = masters[name]
        np.testing.assert_array_equal(p.numpy() if p.dtype.name != "bfloat16" else
                                      p.astype("float32").numpy(),
                                      m.astype("bfloat16").astype("float32").numpy())
        assert p.grad is None or float(p.grad.abs().sum().astype("float32")) == 0.0


def test_decorate_excluded_layers_and_errors():
    net = _Net()
    out = amp.decorate(net, level="O2", dtype="float16", excluded_layers=[net.fc2])
    assert out is net
    assert net.fc1.weight.dtype.name == "float16" and net.fc2.weight.dtype.name == "float32"
    with pytest.raises(TypeError, match="Layer"):
        amp.decorate("model", level="O2")
    with pytest.raises(ValueError, match="level"):
        amp.decorate(_Net(), level="O5")
