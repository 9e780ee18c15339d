"""dist.to_static / DistModel / Strategy: 2-process GPT training equal to dynamic mode and to
one process (workers/static_mode.py), and the Strategy's validation in one process."""
import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("mode,kind", [("dp", "adamw"), ("mp", "adamw"), ("dp", "sgd"), ("mp", "sgd"), ("dp", "clip"),
                                       ("mp", "clip"), ("mp", "nadam"), ("dp", "radam"), ("dp", "rprop"),
                                       ("mp", "asgd")])
def test_dist_model_trains_like_dynamic_mode_and_one_process(mode, kind, tmp_path):
    results, _ = run_ranks("static_mode.py", 2, args=[mode, kind], tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"static {mode} {kind} ok {rank}" in out


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
    import warnings

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
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled: the update in the program
        loss = dm(x, y)
    assert "dist.sgd_update" in str(dm.dist_main_program())
    np.testing.assert_allclose(float(loss.numpy()), float(want.numpy()), rtol=1e-6)
    np.testing.assert_allclose(b.weight.numpy(), a.weight.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="batch of shape \\[4, 3\\] does not split into pipeline.accumulate_steps=3"):
        dm(oar.randn([4, 3]), oar.randn([4, 2]))


def _linear_dist_model(compile_=True):
    from oar.distributed import ProcessMesh, Shard
    oar.seed(3)
    mesh = ProcessMesh([0], dim_names=["dp"])
    lin = oar.nn.Linear(4, 3)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=lin.parameters())
    lin, opt = dist.parallelize(lin, opt, mesh, {"dp_config": {"sharding_level": 0}})
    dm = dist.to_static(lin, None, lambda o, y: ((o - y) ** 2).mean(), opt)
    dm._compile = compile_
    return dm, lin, mesh, Shard


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_dist_model_compiled_in_one_process_equals_eager():
    """A 1-process dp mesh: the compiled step (its dist.* ops run as local copies) gives the
    eager step's losses and parameters; the program names its collectives."""
    import re
    import warnings
    oar.set_default_dtype("float64")
    try:
        runs = []
        for compile_ in (True, False):
            dm, lin, mesh, Shard = _linear_dist_model(compile_)
            rng = np.random.default_rng(0)
            losses = []
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                for _ in range(5):
                    x = dist.shard_tensor(oar.to_tensor(rng.standard_normal((6, 4))), mesh, [Shard(0)])
                    y = dist.shard_tensor(oar.to_tensor(rng.standard_normal((6, 3))), mesh, [Shard(0)])
                    losses.append(float(dist.unshard_dtensor(dm(x, y)).numpy()))
            runs.append((losses, lin.weight._local_value().numpy().copy(), dm))
        np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-12)
        np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-12)
        text = str(runs[0][2].dist_main_program())
        ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', text)
        # the loss (Partial avg over dp) is all-reduced once (the returned loss, and the seed the
        # backward starts from); the two gradients (Partial sum) once each
        assert ops.count("dist.all_reduce") == 3 and text.count('reduce = "kRedAvg"') == 1, text
        # then the SGD update of both parameters, written back into them
        assert ops.count("dist.sgd_update") == 1 and ops.index("dist.sgd_update") > ops.index("dist.all_reduce")
        assert ops.count("builtin.set_parameter") == 2
        assert ops.count("dist.shard_slice") == 1  # the seed cut back to the batch shard
        # made by the passes from the global program: no annotation left in it; the global one has
        # the inputs', the parameters', the loss's and the gradients' (Note [DistModel])
        assert "dist.shard_annotate" not in text and "dist_out" not in text
        serial = str(runs[0][2].serial_main_program())
        placements = re.findall(r'"dist.shard_annotate"\(%\d+\) \{placements = #dist.placements<\[(\w+\(\d*\))\]', serial)
        assert placements == ["Shard(0)"] * 2 + ["Replicate()"] * 2 + ["Replicate()"] + ["Replicate()"] * 2, placements
        assert 'name = "x0"} : () -> (tensor<6x4xf64>)' in serial
        assert ops.count("pd_op.matmul") == 2 and ops.index("pd_op.matmul") < ops.index("dist.all_reduce")
        with pytest.raises(RuntimeError, match="no eval step has been compiled yet"):
            runs[0][2].dist_main_program("eval")
        with pytest.raises(RuntimeError, match="serial_main_program: no eval step has been compiled yet"):
            runs[0][2].serial_main_program("eval")
        with pytest.raises(ValueError, match="mode must be 'train', 'eval' or 'predict', got 'test'"):
            runs[0][2].dist_main_program("test")
        assert runs[1][2]._last == {}  # the eager one compiled nothing
    finally:
        oar.set_default_dtype("float32")


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_dist_model_bad_inputs_raise_not_fall_back():
    """Bad inputs raise the eager error (naming the op and the layouts), never a silent eager
    fallback or a wrong program."""
    import warnings
    from oar.distributed import ProcessMesh, Replicate
    dm, lin, mesh, Shard = _linear_dist_model()
    other = ProcessMesh([0], dim_names=["x"])
    x = dist.shard_tensor(oar.randn([6, 5]), mesh, [Shard(0)])  # 5 features for a Linear(4, 3)
    y = dist.shard_tensor(oar.randn([6, 3]), mesh, [Shard(0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="linear: x's last dimension must equal weight's first"):
            dm(x, y)
        x2 = dist.shard_tensor(oar.randn([6, 4]), ProcessMesh([0, 1], dim_names=["dp"]), [Shard(0)])
        with pytest.raises(NotImplementedError, match="matmul: inputs on different meshes"):
            dm(x2, y)  # the input on another mesh than the parameters: eager's error, no warning
        with pytest.raises(ValueError, match="placements"):
            dist.shard_tensor(oar.randn([6, 4]), mesh, [Shard(0), Replicate()])  # 2 placements, 1-d mesh
        with pytest.raises(ValueError, match="Shard"):
            dist.shard_tensor(oar.randn([6, 4]), other, [Shard(2)])  # a dim the tensor lacks
    assert dm._last == {}


def test_lower_collectives_rejects_malformed_ops():
    if not hasattr(oar._C.distributed, "lower_collectives"):
        pytest.skip("built without Gloo")
    base = ('module {\n  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4xf64>)\n'
            '  %1 = "dist.all_reduce"(%0) {ATTRS} : (tensor<4xf64>) -> (tensor<4xf64>)\n'
            '  "builtin.output"(%1) {name = "out0"} : (tensor<4xf64>) -> ()\n}\n')
    good = 'axis = 0, global_shape = #shape[4], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"'
    p = oar._C.pir.parse(base.replace("ATTRS", good))
    assert oar._C.distributed.lower_collectives(p) == 1 and "dist_collective_" in str(p)
    for attrs, words in [(good.replace("axis = 0", "axis = 3"), "axis 3 is outside the mesh's 1 axes"),
                         (good.replace('reduce = "kRedSum"', 'reduce = "kRedMean"'), "unknown reduce type 'kRedMean'"),
                         (good.replace("axis = 0, ", ""), "attribute 'axis' is missing")]:
        with pytest.raises(Exception, match=words):
            oar._C.distributed.lower_collectives(oar._C.pir.parse(base.replace("ATTRS", attrs)))


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_dist_model_falls_back_to_eager_with_a_warning_naming_the_construct():
    """A step that runs eagerly but cannot be traced (the loss reads a value in Python) runs
    eagerly, with one warning naming why; later calls of that signature stay eager."""
    import warnings
    dm, lin, mesh, Shard = _linear_dist_model()
    seen = []

    def loss(o, y):
        seen.append(float(o.sum().numpy()))  # a Python read of a traced value
        return ((o - y) ** 2).mean()
    dm._loss_fn = loss
    x = dist.shard_tensor(oar.randn([6, 4]), mesh, [Shard(0)])
    y = dist.shard_tensor(oar.randn([6, 3]), mesh, [Shard(0)])
    with pytest.warns(UserWarning, match="the train step cannot be compiled into a program \\(Dy2StaticError"):
        dm(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dm(x, y)
    assert dm._last == {} and len(seen) == 2


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("mode", ["dp", "mp"])
def test_dist_model_amp_bfloat16_trains_like_dynamic_mode(mode, tmp_path):
    results, _ = run_ranks("dist_amp.py", 2, args=[mode], tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"amp {mode} ok {rank}" in out
