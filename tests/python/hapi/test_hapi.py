"""oar.Model (fit/evaluate/predict/save/load), callbacks, the TensorBoard writer,
oar.summary and oar.flops."""

import os
import re
import struct

import numpy as np
import pytest

import oar
from build_tree import worker_start_method
from oar.hapi import tfevents
from oar.io import Dataset


class Blobs(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(n, 4)).astype(np.float32)
        self.y = (self.x[:, 0] + self.x[:, 1] > 0).astype(np.int64)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def make_model(lr=0.05, metrics=True, seed=0):
    oar.seed(seed)
    net = oar.nn.Sequential(oar.nn.Linear(4, 16), oar.nn.ReLU(), oar.nn.Linear(16, 2))
    model = oar.Model(net)
    opt = oar.optimizer.Adam(lr, parameters=net.parameters())
    model.prepare(opt, oar.nn.CrossEntropyLoss(), oar.metric.Accuracy() if metrics else None)
    return model


def test_fit_evaluate_predict(capsys):
    model = make_model()
    model.fit(Blobs(256, 0), Blobs(128, 1), batch_size=32, epochs=3, verbose=0)
    res = model.evaluate(Blobs(128, 1), batch_size=64, verbose=0)
    assert set(res) == {"loss", "acc"} and res["acc"] > 0.9 and res["loss"][0] < 0.4
    out = model.predict(Blobs(10, 2), batch_size=4, verbose=0)
    assert len(out) == 1 and [o.shape for o in out[0]] == [(4, 2), (4, 2), (2, 2)]
    stacked = model.predict(Blobs(10, 2), batch_size=4, stack_outputs=True, verbose=0)
    np.testing.assert_allclose(stacked[0], np.concatenate(out[0]))
    assert capsys.readouterr().out == ""


def test_train_eval_predict_batch_shapes():
    model = make_model()
    ds = Blobs(8, 0)
    losses, metrics = model.train_batch([ds.x], [ds.y])
    assert len(losses) == 1 and np.asarray(losses[0]).size == 1 and 0 <= metrics[0] <= 1
    losses, metrics = model.eval_batch([ds.x], [ds.y])
    assert len(losses) == 1
    out = model.predict_batch([ds.x])
    assert out[0].shape == (8, 2)
    nometric = make_model(metrics=False)
    assert len(nometric.train_batch([ds.x], [ds.y])) == 1


def test_progress_bar_format(capsys):
    model = make_model()
    model.fit(Blobs(64, 0), Blobs(32, 1), batch_size=16, epochs=2, verbose=2, log_freq=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "Eval begin..." in out
    assert "Eval samples: 32" in out
    assert re.search(
        r"step 2/4 - loss: \d+\.\d{4} - acc: \d\.\d{4} - ETA: \d+s - \d+(us|ms|s)/step", out
    )
    assert re.search(r"step 4/4 - loss: \d+\.\d{4} - acc: \d\.\d{4} - \d+(us|ms|s)/step", out)
    model.fit(Blobs(64, 0), batch_size=16, epochs=1, verbose=1, log_freq=1)
    out = capsys.readouterr().out
    assert re.search(r"\rstep 4/4 \[={30}\] - loss: \d+\.\d{4}", out)
    assert "step 2/4 [" in out and ">" in out.split("step 2/4 [")[1].split("]")[0]


def test_save_load_roundtrip_identical_predictions(tmp_path):
    model = make_model()
    model.fit(Blobs(128, 0), batch_size=32, epochs=1, verbose=0)
    path = str(tmp_path / "ckpt" / "m")
    model.save(path)
    assert os.path.exists(path + ".pdparams") and os.path.exists(path + ".pdopt")
    ref = model.predict(Blobs(16, 3), batch_size=16, verbose=0)[0][0]
    other = make_model(seed=5)
    assert not np.array_equal(other.predict(Blobs(16, 3), batch_size=16, verbose=0)[0][0], ref)
    other.load(path)
    np.testing.assert_array_equal(other.predict(Blobs(16, 3), batch_size=16, verbose=0)[0][0], ref)
    # resumed training equals uninterrupted training
    model.fit(Blobs(64, 4), batch_size=32, epochs=1, verbose=0, shuffle=False)
    other.fit(Blobs(64, 4), batch_size=32, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.network.parameters(), other.network.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_load_skip_mismatch_and_errors(tmp_path):
    model = make_model()
    path = str(tmp_path / "m")
    model.save(path)
    oar.seed(1)
    net = oar.nn.Sequential(oar.nn.Linear(4, 16), oar.nn.ReLU(), oar.nn.Linear(16, 3))
    m2 = oar.Model(net)
    with pytest.raises(ValueError, match="shape mismatch"):
        m2.load(path)
    with pytest.warns(UserWarning, match="skipping '2.weight'"):
        m2.load(path, skip_mismatch=True)
    np.testing.assert_array_equal(net[0].weight.numpy(), model.network[0].weight.numpy())
    with pytest.raises(RuntimeError, match="prepare"):
        oar.Model(net).fit(Blobs(8, 0), verbose=0)
    with pytest.raises(TypeError, match="Metric"):
        oar.Model(net).prepare(None, None, metrics=[object()])


def test_model_checkpoint_and_lr_scheduler_callback(tmp_path):
    oar.seed(0)
    net = oar.nn.Linear(4, 2)
    sched = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(sched, parameters=net.parameters()), oar.nn.CrossEntropyLoss())
    model.fit(Blobs(64, 0), batch_size=16, epochs=2, save_dir=str(tmp_path), save_freq=1, verbose=0)
    assert sched.last_epoch == 8  # stepped after every batch
    names = sorted(os.listdir(tmp_path))
    assert names == [
        "0.pdopt",
        "0.pdparams",
        "1.pdopt",
        "1.pdparams",
        "final.pdopt",
        "final.pdparams",
    ]
    sched2 = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    m2 = oar.Model(oar.nn.Linear(4, 2))
    m2.prepare(
        oar.optimizer.SGD(sched2, parameters=m2.network.parameters()), oar.nn.CrossEntropyLoss()
    )
    m2.load(str(tmp_path / "final"))
    assert sched2.last_epoch == 8
    epochwise = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    m3 = oar.Model(oar.nn.Linear(4, 2))
    m3.prepare(
        oar.optimizer.SGD(epochwise, parameters=m3.network.parameters()), oar.nn.CrossEntropyLoss()
    )
    m3.fit(
        Blobs(64, 0),
        batch_size=16,
        epochs=3,
        verbose=0,
        callbacks=[oar.callbacks.LRScheduler(by_step=False, by_epoch=True)],
    )
    assert epochwise.last_epoch == 3


def test_early_stopping(tmp_path):
    class Worse(oar.metric.Metric):
        """acc that only gets worse after the first evaluation."""

        calls = 0

        def reset(self):
            pass

        def update(self, *a):
            return 0.0

        def accumulate(self):
            return 1.0 / (1 + Worse.calls)

        def name(self):
            return "acc"

        def compute(self, pred, label):
            return pred

    model = make_model(metrics=False)
    model._metrics = [Worse()]

    class Count(oar.callbacks.Callback):
        def on_eval_end(self, logs=None):
            Worse.calls += 1

    es = oar.callbacks.EarlyStopping(monitor="acc", patience=1, save_best_model=True, verbose=0)
    seen = []

    class Epochs(oar.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)

    model.fit(
        Blobs(32, 0),
        Blobs(16, 1),
        batch_size=16,
        epochs=10,
        verbose=0,
        save_dir=str(tmp_path),
        callbacks=[es, Count(), Epochs()],
    )
    assert seen == [0, 1, 2]  # best at eval 1, worse twice > patience 1 -> stop
    assert os.path.exists(tmp_path / "best_model.pdparams")


def test_visualdl_writes_tensorboard_events(tmp_path):
    model = make_model()
    logdir = tmp_path / "vdl"
    model.fit(
        Blobs(64, 0),
        Blobs(32, 1),
        batch_size=16,
        epochs=2,
        verbose=0,
        callbacks=[oar.callbacks.VisualDL(str(logdir))],
    )
    (f,) = os.listdir(logdir)
    assert f.startswith("events.out.tfevents.")
    scalars = tfevents.read_scalars(str(logdir / f))
    tags = {t for t, *_ in scalars}
    assert {"train/loss", "train/acc", "train/lr", "eval/loss", "eval/acc"} <= tags
    train_steps = [s for t, s, *_ in scalars if t == "train/loss"]
    assert train_steps == list(range(1, 9))
    first = next(tfevents.read_records(str(logdir / f)))
    assert b"brain.Event:2" in first
    raw = bytearray((logdir / f).read_bytes())
    raw[20] ^= 1
    (tmp_path / "bad").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="checksum"):
        list(tfevents.read_records(str(tmp_path / "bad")))


def test_crc32c_known_vectors():
    assert tfevents.crc32c(b"") == 0
    assert tfevents.crc32c(b"123456789") == 0xE3069283
    assert tfevents.crc32c(b"\x00" * 32) == 0x8A9136AA
    rec = tfevents.encode_record(b"abc")
    assert struct.unpack("<Q", rec[:8])[0] == 3 and len(rec) == 8 + 4 + 3 + 4


def test_events_readable_by_tensorboard(tmp_path):
    ea = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="the tensorboard package is not installed",
    )
    w = tfevents.SummaryWriter(str(tmp_path))
    for i in range(5):
        w.add_scalar("loss", 1.0 / (i + 1), i)
    w.close()
    acc = ea.EventAccumulator(str(tmp_path))
    acc.Reload()
    vals = [e.value for e in acc.Scalars("loss")]
    assert vals == pytest.approx([1.0 / (i + 1) for i in range(5)])


class Net2(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = oar.nn.Linear(8, 6)
        self.act = oar.nn.ReLU()
        self.fc2 = oar.nn.Linear(6, 3, bias_attr=oar.ParamAttr(trainable=False))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_summary_table_and_totals(capsys):
    res = oar.summary(Net2(), (-1, 8))
    out = capsys.readouterr().out
    assert res == {"total_params": 54 + 21, "trainable_params": 54 + 18}
    lines = out.splitlines()
    assert lines[1].split() == [
        "Layer",
        "(type)",
        "Input",
        "Shape",
        "Output",
        "Shape",
        "Param",
        "#",
    ]
    assert set(lines[2]) == {"="}
    assert lines[3].split() == ["Linear-1", "[[1,", "8]]", "[1,", "6]", "54"]
    assert lines[4].split()[0] == "ReLU-1" and lines[5].split()[0] == "Linear-2"
    assert "Total params: 75" in out and "Trainable params: 72" in out
    assert "Non-trainable params: 3" in out and "Estimated Total Size (MB):" in out
    oar.summary(Net2(), input=oar.ones([2, 8]))
    assert "[[2, 8]]" in capsys.readouterr().out
    with pytest.raises(ValueError, match="input_size"):
        oar.summary(Net2(), (0, 8))


def test_flops_counts(capsys):
    class Odd(oar.nn.Layer):
        def forward(self, x):
            return x * 2

    net = oar.nn.Sequential(Net2(), Odd())
    total = oar.flops(net, [2, 8], print_detail=True)
    out = capsys.readouterr().out
    assert total == 8 * 2 * 6 + 6 * 2 * 3  # Linear: in_features * output numel
    assert "Cannot find suitable count function" in out and "Total Flops: 132" in out
    assert out.count("'s flops has been counted") == 2  # Linear and ReLU, once each
    assert "|  Layer Name  |" in out or "Layer Name" in out
    total = oar.flops(net, [2, 8], custom_ops={Odd: lambda m, x, y: 7})
    assert total == 132 + 7
    assert "Customize Function has been applied to" in capsys.readouterr().out
    assert not hasattr(net[1], "total_ops")


def test_dataloader_with_workers_in_fit():
    model = make_model()
    loader = oar.io.DataLoader(Blobs(64, 0), batch_size=16, shuffle=True, num_workers=2,
                               multiprocessing_context=worker_start_method())
    model.fit(loader, epochs=2, verbose=0)
    assert model.evaluate(Blobs(64, 1), batch_size=32, verbose=0)["acc"] > 0.8


def test_amp_configs_validation():
    model = make_model()
    net, opt = model.network, model._optimizer
    with pytest.raises(ValueError, match="amp level"):
        model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs="O3")
    model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs={"level": "O0"})
    assert model._amp_level == "O0" and model.network is net
    if not hasattr(oar, "amp"):
        with pytest.raises(RuntimeError, match="oar.amp"):
            model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs="O1")




@pytest.mark.parametrize(
    "cfg",
    ["O1", {"level": "O1", "dtype": "bfloat16"}, {"level": "O2", "init_loss_scaling": 1024.0}],
)
def test_fit_with_amp(cfg):
    model = make_model()
    with pytest.raises(ValueError, match="unknown amp_configs"):
        model.prepare(
            model._optimizer, oar.nn.CrossEntropyLoss(), amp_configs={"level": "O1", "bogus": 1}
        )
    model.prepare(
        model._optimizer, oar.nn.CrossEntropyLoss(), oar.metric.Accuracy(), amp_configs=cfg
    )
    model.fit(Blobs(256, 0), batch_size=32, epochs=3, verbose=0)
    res = model.evaluate(Blobs(128, 1), batch_size=64, verbose=0)
    assert res["acc"] > 0.85 and np.isfinite(res["loss"][0])
