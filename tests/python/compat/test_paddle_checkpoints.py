"""oar.load reads paddle.save's files (Note [Paddle checkpoints] in framework_io.py): the
checkpoints in paddle331/ were written by PaddlePaddle 3.3.1 (make_checkpoints.py there), and
training resumed from them in Oar matches Paddle's own next step (expected.json). The
restricted unpickler builds only arrays and containers: a pickle naming any other callable is
refused before anything runs."""
import json
import os
import pickle

import numpy as np
import pytest

import oar

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle331")


def test_resuming_paddles_adam_checkpoint_matches_paddles_next_step():
    a, b = oar.nn.Linear(2, 3), oar.nn.Linear(3, 1)  # named unlike Paddle's linear_0/1 here
    state = oar.load(os.path.join(HERE, "model.pdparams"))
    assert isinstance(state["a"]["weight"], oar.Tensor) and state["a"]["weight"].stop_gradient
    a.set_state_dict(state["a"])
    b.set_state_dict(state["b"])
    opt = oar.optimizer.Adam(learning_rate=0.1, parameters=a.parameters() + b.parameters())
    opt.set_state_dict(oar.load(os.path.join(HERE, "adam.pdopt")))
    x = oar.to_tensor([[1.0, 2.0], [-1.0, 0.5]])
    h = a(x)
    loss = (b(oar.nn.functional.relu(h)) ** 2).mean() + (h * h).mean()
    loss.backward()
    opt.step()
    want = json.load(open(os.path.join(HERE, "expected.json")))
    np.testing.assert_allclose(float(loss), want["loss"], rtol=1e-6)
    for p, w in zip(a.parameters() + b.parameters(), want["weights"]):
        np.testing.assert_allclose(p.numpy(), np.asarray(w, np.float32), rtol=1e-5, atol=3e-6)


def test_nested_containers_load_as_paddle_load_returns_them():
    d = oar.load(os.path.join(HERE, "nested.pd"))
    assert set(d) == {"list", "tuple", "bf16"}
    t, three, x = d["list"]
    assert isinstance(t, oar.Tensor) and t.dtype == oar.float32 and t.numpy().tolist() == [1.5, -2.0]
    assert three == 3 and x == "x"
    ints, inner = d["tuple"]
    assert ints.dtype == oar.int64 and ints.numpy().tolist() == [1, 2]
    assert type(inner["arr"]) is np.ndarray and inner["arr"].tolist() == [0, 1, 2]  # deeper arrays stay arrays
    assert d["bf16"].dtype == oar.bfloat16 and d["bf16"].astype("float32").numpy().tolist() == [1.5, -2.0]
    raw = oar.load(os.path.join(HERE, "model.pdparams"), return_numpy=True)
    assert type(raw["a"]["weight"]) is np.ndarray and raw["a"]["weight"].shape == (2, 3)
    assert "StructuredToParameterName@@" not in oar.load(os.path.join(HERE, "adam.pdopt"))


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/oar_pickle_ran",))


def test_a_pickle_naming_other_callables_is_refused_before_running(tmp_path):
    marker = "/tmp/oar_pickle_ran"
    if os.path.exists(marker):
        os.remove(marker)
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps({"w": np.ones(2), "x": _Evil()}, protocol=4))
    with pytest.raises(ValueError, match=r"evil\.pdparams' is neither an Oar/safetensors checkpoint .* nor a "
                                         r"Paddle checkpoint pickle \(it refers to (posix|os)\.system"):
        oar.load(str(path))
    assert not os.path.exists(marker)


def test_a_truncated_paddle_pickle_is_a_value_error(tmp_path):
    data = open(os.path.join(HERE, "adam.pdopt"), "rb").read()
    path = tmp_path / "cut.pdopt"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut\.pdopt' is neither an Oar/safetensors checkpoint"):
        oar.load(str(path))


def test_paddles_extra_optimizer_entries():
    """A Paddle optimizer state may hold the pickle's name map (when read without oar.load)
    and an O2 run's 'master_weights': neither is an accumulator; the masters are not
    restored, with a warning saying so."""
    layer = oar.nn.Linear(2, 1)
    opt = oar.optimizer.Adam(parameters=layer.parameters())
    layer(oar.ones([1, 2])).sum().backward()
    opt.step()
    state = {k: v for k, v in opt.state_dict().items() if not k.startswith("@")}
    state["StructuredToParameterName@@"] = {"x": "y"}
    oar.optimizer.Adam(parameters=layer.parameters()).set_state_dict(state)
    state["master_weights"] = {}
    with pytest.warns(UserWarning, match="'master_weights' .* are not restored"):
        oar.optimizer.Adam(parameters=layer.parameters()).set_state_dict(state)


def test_adadelta_state_keys_are_paddles_and_older_ones_still_load():
    """Paddle 3.3.1 names Adadelta's accumulators '_avg_squared_grad' / '_avg_squared_update'
    (keys '{param}__avg_squared_grad_0'); Oar writes those, and still reads its older names."""
    layer = oar.nn.Linear(2, 1)
    opt = oar.optimizer.Adadelta(learning_rate=1.0, parameters=layer.parameters())
    layer(oar.ones([1, 2])).sum().backward()
    opt.step()
    state = opt.state_dict()
    w = layer.weight.name
    assert {f"{w}__avg_squared_grad_0", f"{w}__avg_squared_update_0"} <= set(state)
    older = {k.replace("__avg", "_avg"): (v.numpy() if isinstance(v, oar.Tensor) else v) for k, v in state.items()}
    resumed = oar.optimizer.Adadelta(learning_rate=1.0, parameters=layer.parameters())
    resumed.set_state_dict(older)
    np.testing.assert_array_equal(resumed.state_dict()[f"{w}__avg_squared_grad_0"].numpy(),
                                  state[f"{w}__avg_squared_grad_0"].numpy())
