"""Differences found by running the same training workflows under Paddle 3.3.1 and Oar
(data loading, optimizers, checkpoints, export, deployment). Paddle's behaviour is encoded as
explicit values or NumPy references."""
import os

import warnings

import numpy as np
import pytest

import oar
from build_tree import worker_start_method
from oar.io import DataLoader, Dataset

MP = worker_start_method()


class Pairs(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return np.full([2], i, np.float32), i


def np_collate(samples):  # what paddlenlp.data.Tuple(Stack(), Stack()) returns: NumPy arrays
    xs = np.stack([s[0] for s in samples])
    return xs, (np.array([s[1] for s in samples]), len(samples)), {"k": xs[:, :1], "name": "a"}


def _check_np_collate_batch(b):
    assert type(b) is list and len(b) == 3
    assert isinstance(b[0], oar.Tensor) and b[0].shape == [2, 2] and b[0].dtype == oar.float32
    assert type(b[1]) is list and isinstance(b[1][0], oar.Tensor) and b[1][0].dtype == oar.int64
    assert b[1][1] == 2 and type(b[1][1]) is int
    assert isinstance(b[2]["k"], oar.Tensor) and b[2]["name"] == "a"


@pytest.mark.parametrize("workers", [0, 1])
def test_collate_fn_arrays_become_tensors_and_tuples_lists(workers):
    # Paddle: whatever collate_fn returns, its NumPy arrays reach the loop as Tensors and its
    # tuples as lists (the training loop feeds them straight to the model).
    kw = {"multiprocessing_context": MP} if workers else {}
    ld = DataLoader(Pairs(), batch_size=2, collate_fn=np_collate, num_workers=workers, **kw)
    for b in ld:
        _check_np_collate_batch(b)
    one = next(iter(DataLoader(Pairs(), batch_size=2, num_workers=workers,
                               collate_fn=lambda s: np.stack([x[0] for x in s]), **kw)))
    assert isinstance(one, oar.Tensor) and one.shape == [2, 2]


def test_unbatched_sample_is_a_list_of_tensors():
    b = next(iter(DataLoader(Pairs(), batch_size=None)))
    assert type(b) is list and isinstance(b[0], oar.Tensor) and b[1] == 0


def _adam_ref(w, grads_per_step, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    """Paddle's Adam for one parameter: its bias correction counts its own updates."""
    m = v = 0.0
    t = 0
    for g in grads_per_step:
        if g is None:  # no gradient this step: no update, the step count stays
            continue
        t += 1
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return w


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax"])
def test_bias_correction_counts_each_parameters_own_updates(name):
    # A parameter that first gets a gradient at step 3 (staged unfreezing, an unused branch)
    # starts its bias correction at t=1, as Paddle's per-parameter beta-power accumulators.
    a, b = oar.nn.Linear(2, 2, bias_attr=False), oar.nn.Linear(2, 2, bias_attr=False)
    for p in (a.weight, b.weight):
        p.set_value(np.full([2, 2], 0.5, np.float32))
    kw = {"weight_decay": 0.0} if name == "AdamW" else {}
    opt = getattr(oar.optimizer, name)(0.1, parameters=[a.weight, b.weight], **kw)
    x = oar.ones([1, 2])
    for step in range(4):
        loss = a(x).sum() + (b(x).sum() if step >= 2 else 0)
        loss.backward()
        opt.step()
        opt.clear_grad(set_to_zero=False)
    if name == "Adamax":  # m / (1 - b1^t) / max(b2 u, |g|) with g = 1: exactly lr per update
        want_a, want_b = 0.5 - 4 * 0.1, 0.5 - 2 * 0.1
    else:
        want_a, want_b = _adam_ref(0.5, [1.0] * 4), _adam_ref(0.5, [None, None, 1.0, 1.0])
    np.testing.assert_allclose(a.weight.numpy(), np.full([2, 2], want_a), atol=1e-5)
    np.testing.assert_allclose(b.weight.numpy(), np.full([2, 2], want_b), atol=1e-5)


def test_converted_training_step_keeps_each_parameters_step_count():
    # A to_static training step that leaves b out (no gradient) counts the steps b sat out,
    # as an eager step does; a step whose parameters sat out earlier steps runs eagerly (the
    # program has one step holder per optimizer), so b's first update starts its bias
    # correction at t=1 either way.
    a, b = oar.nn.Linear(2, 2, bias_attr=False), oar.nn.Linear(2, 2, bias_attr=False)
    for p in (a.weight, b.weight):
        p.set_value(np.full([2, 2], 0.5, np.float32))
    opt = oar.optimizer.Adam(0.1, parameters=[a.weight, b.weight])

    @oar.jit.to_static
    def step_a(x):
        loss = a(x).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    @oar.jit.to_static
    def step_ab(x):
        loss = a(x).sum() + b(x).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    x = oar.ones([1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the step converts: no fallback to eager
        for _ in range(3):
            step_a(x)
    assert opt._step_count == 3 and opt._step_lag[id(b.weight)] == 3
    with pytest.warns(UserWarning, match=r"Adam\.step\(\) inside the converted function"):
        step_ab(x)
    step_ab(x)
    np.testing.assert_allclose(a.weight.numpy(), np.full([2, 2], _adam_ref(0.5, [1.0] * 5)), atol=1e-5)
    np.testing.assert_allclose(b.weight.numpy(), np.full([2, 2], _adam_ref(0.5, [None] * 3 + [1.0] * 2)),
                               atol=1e-5)


def test_per_parameter_step_survives_state_dict_round_trip():
    def make():
        a, b = oar.nn.Linear(2, 1, bias_attr=False), oar.nn.Linear(2, 1, bias_attr=False)
        for p in (a.weight, b.weight):
            p.set_value(np.full([2, 1], 0.5, np.float32))
        return a, b, oar.optimizer.Adam(0.1, parameters=[a.weight, b.weight])

    x = oar.ones([1, 2])

    def step(a, b, opt, use_b):
        (a(x).sum() + (b(x).sum() if use_b else 0)).backward()
        opt.step()
        opt.clear_grad(set_to_zero=False)

    a, b, opt = make()
    for s in range(4):
        step(a, b, opt, s >= 2)
    a2, b2, opt2 = make()
    for s in range(2):
        step(a2, b2, opt2, s >= 2)
    a3, b3, opt3 = make()  # resumes from opt2's state
    a3.weight.set_value(a2.weight.numpy())
    b3.weight.set_value(b2.weight.numpy())
    opt3.set_state_dict(opt2.state_dict())
    for s in range(2, 4):
        step(a3, b3, opt3, True)
    np.testing.assert_allclose(b3.weight.numpy(), b.weight.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b3.weight.numpy(), np.full([2, 1], _adam_ref(0.5, [None] * 2 + [1.0] * 2)),
                               atol=1e-5)
    np.testing.assert_allclose(a3.weight.numpy(), a.weight.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "Lamb"])
def test_beta_power_accumulators_as_paddle(name):
    """Paddle's state_dict holds '{param}_beta1_pow_acc_0' (and beta2's; Adamax only beta1's):
    float32 [1] tensors of beta^(t + 1) after the parameter's t-th update. Oar writes them, and
    resumes from a state that has only them (no '@step': a Paddle checkpoint) with each
    parameter's own count, here b, which sat out two of four steps."""
    a, b = oar.nn.Linear(2, 1, bias_attr=False), oar.nn.Linear(2, 1, bias_attr=False)
    params = [a.weight, b.weight]
    for p in params:
        p.set_value(np.full([2, 1], 0.5, np.float32))
    cls = getattr(oar.optimizer, name)
    opt = cls(learning_rate=0.1, parameters=params)
    x = oar.ones([1, 2])

    def step(o, use_b):
        (a(x).sum() + (b(x).sum() if use_b else 0)).backward()
        o.step()
        o.clear_grad(set_to_zero=False)

    for s in range(4):
        step(opt, s >= 2)
    state = opt.state_dict()
    pows = [("beta1_pow_acc", 0.9)] + ([] if name == "Adamax" else [("beta2_pow_acc", 0.999)])
    for p, t in ((a.weight, 4), (b.weight, 2)):
        for acc, beta in pows:
            v = state[f"{p.name}_{acc}_0"]
            assert v.shape == [1] and v.dtype == oar.float32, (acc, v)
            np.testing.assert_allclose(v.numpy(), [beta ** (t + 1)], rtol=1e-6)
    paddle_form = {k: v.numpy().copy() for k, v in state.items() if not k.startswith("@")}
    w4 = [p.numpy().copy() for p in params]
    for _ in range(2):
        step(opt, True)
    want = [p.numpy().copy() for p in params]
    for p, w in zip(params, w4):
        p.set_value(w)
    resumed = cls(learning_rate=0.1, parameters=params)
    resumed.set_state_dict(paddle_form)
    for _ in range(2):
        step(resumed, True)
    for p, w in zip(params, want):
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-6)
    bad = dict(paddle_form, **{f"{a.weight.name}_beta1_pow_acc_0": np.array([1.5], np.float32)})
    with pytest.raises(ValueError, match=f"{name}.set_state_dict: '{a.weight.name}_beta1_pow_acc_0' must hold"):
        cls(learning_rate=0.1, parameters=params).set_state_dict(bad)


def test_load_gives_stop_gradient_tensors_and_missing_path_is_a_value_error(tmp_path):
    lin = oar.nn.Linear(2, 2)
    t = oar.ones([2])
    t.stop_gradient = False
    oar.save({"sd": lin.state_dict(), "t": t}, str(tmp_path / "x.pdparams"))
    got = oar.load(str(tmp_path / "x.pdparams"))
    # Paddle: loaded tensors are data, stop_gradient=True whatever they were when saved
    assert got["t"].stop_gradient and got["sd"]["weight"].stop_gradient
    with pytest.raises(ValueError):  # Paddle raises ValueError for a missing path
        oar.load(str(tmp_path / "missing.pdparams"))
    with pytest.raises(FileNotFoundError):
        oar.load(str(tmp_path / "missing.pdparams"))


def test_model_save_training_false_writes_an_inference_model(tmp_path):
    net = oar.nn.Sequential(oar.nn.Linear(4, 3), oar.nn.Dropout(0.5))
    model = oar.Model(net, inputs=[oar.static.InputSpec([None, 4], "float32", "x")])
    net.train()
    prefix = str(tmp_path / "infer")
    model.save(prefix, training=False)
    assert net.training  # the network's mode is kept
    assert os.path.exists(prefix + ".pdiparams") and not os.path.exists(prefix + ".pdparams")
    x = oar.ones([2, 4])
    np.testing.assert_allclose(oar.jit.load(prefix)(x).numpy(), net[0](x).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="inputs"):
        oar.Model(oar.nn.Linear(4, 3)).save(str(tmp_path / "b"), training=False)


def test_inference_config_takes_paddle3_json_program_path(tmp_path):
    net = oar.nn.Linear(4, 3)
    prefix = str(tmp_path / "m")
    oar.jit.save(net, prefix, input_spec=[oar.static.InputSpec([None, 4], "float32")])
    x = np.ones([1, 4], np.float32)
    for config in (oar.inference.Config(prefix + ".json", prefix + ".pdiparams"),
                   oar.inference.Config(prefix + ".json")):
        out = oar.inference.create_predictor(config).run([oar.to_tensor(x)])[0]
        np.testing.assert_allclose(out.numpy(), net(oar.to_tensor(x)).numpy(), rtol=1e-6)
