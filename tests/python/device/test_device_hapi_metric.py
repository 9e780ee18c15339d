"""oar.Model (fit/evaluate/predict/save/load), its metrics and oar.summary/oar.flops with the
network on one place and the current device on another. The loaders made each batch, and
summary/flops their zeros input, on the current device, so the network's first op raised a
mixed-place error ("argument 'y' is on sample:0 but the op runs on cpu") before the batches
and the zeros took the network's place."""
import numpy as np
import pytest

import oar
from oar import nn
from oar.io import Dataset

DEV = "sample:0"


class _Blobs(Dataset):
    """Items of NumPy arrays: 4 features and a 0/1 label, as a user's dataset returns them."""

    def __init__(self, n=24):
        self.x = np.random.default_rng(0).standard_normal((n, 4)).astype("float32")
        self.y = (self.x.sum(1) > 0).astype("int64").reshape(-1, 1)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def _net(place):
    """The same initial network (seeded on the CPU) on `place`."""
    cur = oar.get_device()
    oar.set_device("cpu")
    oar.seed(7)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    oar.set_device(cur)
    return net.to(place) if place != "cpu" else net


def _model(net):
    m = oar.Model(net)
    m.prepare(oar.optimizer.Adam(0.05, parameters=net.parameters()), nn.CrossEntropyLoss(),
              oar.metric.Accuracy(topk=(1, 2)))
    return m


def _train(place, current, tmp_path):
    """Fits a network on `place` with `current` as the current device; returns the evaluation
    before and after, the predictions, the parameters and the evaluation of a fresh model
    loaded from the saved checkpoint."""
    net = _net(place)
    oar.set_device(current)
    try:
        m = _model(net)
        before = m.evaluate(_Blobs(), batch_size=8, verbose=0)
        m.fit(_Blobs(), _Blobs(8), batch_size=8, epochs=3, shuffle=False, verbose=0)
        after = m.evaluate(_Blobs(), batch_size=8, verbose=0)
        pred = m.predict(_Blobs(), batch_size=8, stack_outputs=True, verbose=0)[0]
        assert {p.place.device_str() for p in net.parameters()} == {place}
        m.save(str(tmp_path / f"{place}_{current}".replace(":", "")))
        fresh = _model(_net(place))
        fresh.load(str(tmp_path / f"{place}_{current}".replace(":", "")))
        assert {p.place.device_str() for p in fresh.network.parameters()} == {place}
        reloaded = fresh.evaluate(_Blobs(), batch_size=8, verbose=0)
        return before, after, pred, [p.numpy() for p in net.parameters()], reloaded
    finally:
        oar.set_device("cpu")


def _assert_close_logs(got, want):
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("place, current", [(DEV, "cpu"), ("cpu", DEV)],
                         ids=["network on device, cpu current", "network on cpu, device current"])
def test_fit_trains_on_the_networks_place(place, current, on_cpu, tmp_path):
    want = _train("cpu", "cpu", tmp_path)
    before, after, pred, params, reloaded = _train(place, current, tmp_path)
    assert after["loss"][0] < before["loss"][0]
    for got, ref in ((before, want[0]), (after, want[1]), (reloaded, want[4])):
        _assert_close_logs(got, ref)
    _assert_close_logs(after, reloaded)
    np.testing.assert_allclose(pred, want[2], rtol=1e-5, atol=1e-5)
    for p, q in zip(params, want[3]):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-5)


class _Prob(nn.Layer):
    """The class probabilities of a network's logits."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return nn.functional.softmax(self.body(x))


def _positive(metric):
    """A binary metric fed P(class 1), the probabilities' second column."""
    class Positive(metric):
        def compute(self, pred, label):
            return pred[:, 1], label
    return Positive()


def test_numpy_batches_and_metrics_on_device(on_cpu):
    """train/eval/predict_batch on NumPy batches, and each metric on the device's outputs."""
    data = _Blobs()
    batches = [(data.x[i:i + 8], data.y[i:i + 8]) for i in range(0, 24, 8)]
    out = {}
    for place in (DEV, "cpu"):
        net = _net(place)
        m = oar.Model(_Prob(net))
        m.prepare(oar.optimizer.SGD(0.1, parameters=net.parameters()),
                  nn.CrossEntropyLoss(use_softmax=False),
                  [oar.metric.Accuracy(), _positive(oar.metric.Precision),
                   _positive(oar.metric.Recall), oar.metric.Auc()])
        loss = m.train_batch([batches[0][0]], [batches[0][1]])[0]
        ev = m.evaluate(batches, verbose=0)
        pred = m.predict_batch([batches[1][0]])[0]
        x, y = (oar.to_tensor(a, place=place) for a in (data.x, data.y))
        acc = oar.metric.accuracy(m.network(x), y, k=1)
        assert acc.place.device_str() == place
        out[place] = (loss, ev, pred, acc.numpy())
    (loss, ev, pred, acc), want = out[DEV], out["cpu"]
    assert set(ev) == {"loss", "acc", "precision", "recall", "auc"}
    np.testing.assert_allclose(loss[0], want[0][0], rtol=1e-5, atol=1e-6)
    _assert_close_logs(ev, want[1])
    np.testing.assert_allclose(pred, want[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acc, want[3], rtol=1e-6)


def test_summary_and_flops_on_device(on_cpu, capsys):
    net, ref = _net(DEV), _net("cpu")
    assert oar.summary(net, (2, 4)) == oar.summary(ref, (2, 4)) == {"total_params": 58,
                                                                    "trainable_params": 58}
    assert oar.flops(net, [2, 4]) == oar.flops(ref, [2, 4])
    model = oar.Model(net, inputs=[oar.static.InputSpec([None, 4], "float32")])
    assert model.summary() == {"total_params": 58, "trainable_params": 58}
    assert {p.place.device_str() for p in net.parameters()} == {DEV}
    capsys.readouterr()
