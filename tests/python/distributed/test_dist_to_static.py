"""dist.to_static / DistModel / Strategy: 2-process GPT training equal to dynamic mode and to
one process (workers/static_mode.py), and the Strategy's validation in one process."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("mode", ["dp", "mp"])
def test_dist_model_trains_like_dynamic_mode_and_one_process(mode, tmp_path):
    results, _ = run_ranks("static_mode.py", 2, args=[mode], tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"static {mode} ok {rank}" in out


def test_strategy_sections_and_defaults():
    s = dist.Strategy({"sharding": {"enable": True, "stage": 2}, "gradient_merge": {"k_steps": 4}})
    assert s.sharding.enable and s.sharding.stage == 2 and s.sharding.degree == 8
    assert s.gradient_merge.k_steps == 4 and s.gradient_merge.avg is True and not s.gradient_merge.enable
    assert s.pipeline.schedule_mode == "1F1B" and s.pipeline.accumulate_steps == 1
    assert s.amp.dtype == "float16" and s.amp.level == "O1" and s.amp.custom_white_list == []
    assert s.fused_passes.fused_passes_list == []
    s.amp.enable = True
    assert s.amp.to_dict()["enable"] is True
    assert dist.Strategy().amp.enable is False  # sections do not share their defaults


@pytest.mark.parametrize("config,words", [
    ({"shardng": {}}, "unknown sections \\['shardng'\\]"),
    ({"sharding": {"stages": 1}}, "Strategy.sharding has no field 'stages'"),
    ({"sharding": 1}, "section 'sharding' must be a dict"),
])
def test_bad_strategy_configs_name_the_field(config, words):
    with pytest.raises((ValueError, TypeError, AttributeError), match=words):
        dist.Strategy(config)


@pytest.mark.parametrize("section,field,value,words", [
    ("sharding", "stage", 4, "Strategy.sharding.stage must be 0, 1, 2 or 3, got 4"),
    ("gradient_merge", "k_steps", 0, "Strategy.gradient_merge.k_steps must be an int in \\[1, 2\\*\\*20\\], got 0"),
    ("gradient_merge", "k_steps", 2.0, "k_steps must be an int"),
    ("pipeline", "schedule_mode", "GPipe", "schedule_mode must be '1F1B', 'FThenB', 'VPP' or 'Eager1F1B'"),
    ("pipeline", "accumulate_steps", -1, "accumulate_steps must be a positive int, got -1"),
    ("amp", "dtype", "float64", "Strategy.amp.dtype must be 'float16' or 'bfloat16', got 'float64'"),
    ("fused_passes", "enable", "yes", "Strategy.fused_passes.enable must be a bool"),
])
def test_bad_strategy_values_raise_at_to_static(section, field, value, words):
    s = dist.Strategy()
    setattr(getattr(s, section), field, value)
    with pytest.raises(ValueError, match=words):
        dist.to_static(oar.nn.Linear(2, 2), None, lambda o, y: o.mean(), None, strategy=s)


def test_dist_model_modes_in_one_process():
    oar.seed(1)
    lin = oar.nn.Linear(3, 2)
    x, y = oar.randn([4, 3]), oar.randn([4, 2])
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=lin.parameters())
    s = dist.Strategy({"gradient_merge": {"enable": True, "k_steps": 2, "avg": True}})
    dm = dist.to_static(lin, None, lambda o, t: ((o - t) ** 2).mean(), opt, strategy=s)
    w0 = lin.weight.numpy().copy()
    l0 = dm(x, y)
    assert (lin.weight.numpy() == w0).all()  # first of two merged calls: no step yet
    dm(x, y)
    assert not (lin.weight.numpy() == w0).all()
    dm.eval()
    w1 = lin.weight.numpy().copy()
    assert float(dm(x, y).numpy()) < float(l0.numpy())
    assert (lin.weight.numpy() == w1).all()
    dm.predict()
    assert list(dm(x).shape) == [4, 2]
    with pytest.raises(TypeError, match="call it with \\(inputs..., labels\\)"):
        dm.train()
        dm(x)
    with pytest.raises(ValueError, match="mode must be 'all', 'param' or 'opt'"):
        dm.state_dict("params")
    with pytest.raises(RuntimeError, match="DistModel.train: needs the loss and the optimizer"):
        dist.to_static(lin, None, None, None).train()
    with pytest.raises(TypeError, match="strategy must be a dist.Strategy"):
        dist.to_static(lin, strategy={"sharding": {}})
    with pytest.raises(TypeError, match="layer must be an nn.Layer"):
        dist.to_static(lambda x: x)
    with pytest.raises(ValueError, match="Strategy.sharding needs the layer's parameters on a mesh"):
        dist.to_static(lin, None, lambda o, t: o.mean(), opt, dist.Strategy({"sharding": {"enable": True}}))


def test_pipeline_accumulate_steps_splits_the_batch_into_micro_batches():
    """accumulate_steps=3: three micro-batches' gradients (each loss / 3) make one step equal
    to the whole batch's (a mean loss over equal micro-batches); the returned loss is the
    whole batch's."""
    import numpy as np
    oar.seed(2)
    a, b = oar.nn.Linear(3, 2), oar.nn.Linear(3, 2)
    b.set_state_dict(a.state_dict())
    x, y = oar.randn([6, 3]), oar.randn([6, 2])

    def mse(o, t):
        return ((o - t) ** 2).mean()
    oa = oar.optimizer.SGD(learning_rate=0.1, parameters=a.parameters())
    want = mse(a(x), y)
    want.backward()
    oa.step()
    s = dist.Strategy({"pipeline": {"enable": True, "accumulate_steps": 3}})
    dm = dist.to_static(b, None, mse, oar.optimizer.SGD(learning_rate=0.1, parameters=b.parameters()), strategy=s)
    loss = dm(x, y)
    np.testing.assert_allclose(float(loss.numpy()), float(want.numpy()), rtol=1e-6)
    np.testing.assert_allclose(b.weight.numpy(), a.weight.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="batch of shape \\[4, 3\\] does not split into pipeline.accumulate_steps=3"):
        dm(oar.randn([4, 3]), oar.randn([4, 2]))
