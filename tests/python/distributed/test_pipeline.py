"""Cross-mesh reshard and pipeline stages (workers/pipeline.py) on 2 and 4 processes."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("nprocs", [2, 4])
def test_cross_mesh_reshard_and_its_gradient(nprocs, tmp_path):
    results, _ = run_ranks("pipeline.py", nprocs, args=["cross"], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"cross ok {rank}" in out


# clip: every optimizer (the reference's too) clips by the global norm, which spans the stages
# (and the mp/dp axes); the reference clips in some steps and not in others.
@pytest.mark.parametrize("schedule,clip", [("FThenB", False), ("1F1B", False), ("1F1B", True)])
def test_two_stage_pipeline_trains_like_one_process(schedule, clip, tmp_path):
    """pipelining's stages (plain tensors); with clip, fleet.HybridParallelClipGrad over the stages."""
    results, _ = run_ranks("pipeline.py", 2, args=["pp", schedule] + ["clip"] * clip, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp {schedule} ok {rank}" in out


@pytest.mark.parametrize("nprocs,split,clip", [(2, "name", False), (4, "dict", False), (2, "name", True),
                                               (4, "dict", True)])
def test_parallelize_pp_config_trains_like_one_process(nprocs, split, clip, tmp_path):
    """2 stages (pp=2) on 2 processes, and pp x dp 2x2 on 4: equal to one process over 20 steps."""
    results, _ = run_ranks("pipeline.py", nprocs, args=["pp_config", split] + ["clip"] * clip, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp_config ok {rank}" in out


@pytest.mark.parametrize("clip", [False, True])
def test_pp_x_mp_dist_model_with_micro_batches_trains_like_one_process(clip, tmp_path):
    """pp x mp 2x2 on 4 processes through dist.to_static with Strategy.pipeline.accumulate_steps=2."""
    results, _ = run_ranks("pipeline.py", 4, args=["pp_mp_static", "-"] + ["clip"] * clip, tmp_path=tmp_path,
                           timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp_mp_static ok {rank}" in out


@pytest.mark.parametrize("schedule,micro,clip", [("FThenB", 2, False), ("1F1B", 2, False), ("1F1B", 4, False),
                                                  ("FThenB", 2, True), ("1F1B", 4, True)])
def test_pp_dist_model_compiled_trains_like_one_process(schedule, micro, clip, tmp_path):
    """pp=2 on 2 processes through dist.to_static (compiled: send_recv ops between stages, the
    AdamW update in each rank's program), `micro` micro-batches in the schedule's order (1F1B:
    stage 0 one warm-up forward, stage 1 none, each rank tracing its own order), 20 steps
    equal to one process."""
    results, _ = run_ranks("pipeline.py", 2, args=["pp_static", schedule, micro] + ["clip"] * clip, tmp_path=tmp_path,
                           timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp_static {schedule} ok {rank}" in out


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("kind,clip", [("sequential", False), ("sequential", True), ("pipeline_layer", False)])
def test_vpp_dist_model_compiled_trains_like_one_process(kind, clip, tmp_path):
    """schedule_mode VPP: the GPT as 4 virtual stages on 2 ranks (chunk c on rank c % 2), 4
    micro-batches in the interleaved 1F1B order (each rank's program checked against vpp_order
    through its transfers), 20 compiled AdamW steps equal to one process."""
    results, _ = run_ranks("pipeline.py", 2, args=["vpp_static", kind] + ["clip"] * clip, tmp_path=tmp_path,
                           timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"vpp_static ok {rank}" in out


# float32 (the second bar): the eager schedules, parallelize's pp_config, and the
# compiled DistModel pipelines (FThenB, 1F1B, VPP), each against a float32 one-process
# reference: losses to 1e-4 relative (workers/pipeline.py's F32 tolerances).
@pytest.mark.parametrize("args,done", [(["pp", "FThenB"], "pp FThenB"), (["pp", "1F1B"], "pp 1F1B"),
                                       (["pp_config", "name"], "pp_config"),
                                       (["pp_static", "FThenB", 2], "pp_static FThenB"),
                                       (["pp_static", "1F1B", 4], "pp_static 1F1B"),
                                       (["vpp_static", "sequential"], "vpp_static")])
def test_float32_pipelines_train_like_one_process(args, done, tmp_path):
    results, _ = run_ranks("pipeline.py", 2, args=args + ["f32"], tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"{done} ok {rank}" in out


def test_vpp_order_interleaves_chunks():
    """Interleaved 1F1B (Megatron's order): 2 stages x 2 chunks x 4 micro-batches; every unit
    once; each chunk's micro-batches in order; a chunk's backward after its forward."""
    from oar.distributed.auto_parallel.static_pipeline import vpp_order
    assert vpp_order(4, 0, 2, 2)[:8] == [("F", 0, 0), ("F", 1, 0), ("F", 0, 1), ("F", 1, 1), ("F", 2, 0),
                                         ("B", 0, 1), ("F", 3, 0), ("B", 1, 1)]
    assert vpp_order(4, 1, 2, 2)[:4] == [("F", 0, 0), ("F", 1, 0), ("F", 0, 1), ("B", 0, 1)]
    for stages, vpp, micro in [(2, 2, 4), (2, 3, 2), (4, 2, 8), (3, 2, 3)]:
        for stage in range(stages):
            order = vpp_order(micro, stage, stages, vpp)
            assert sorted(order) == sorted((k, i, j) for k in "FB" for i in range(micro) for j in range(vpp))
            for j in range(vpp):
                for kind in "FB":
                    mbs = [i for k, i, c in order if k == kind and c == j]
                    assert mbs == sorted(mbs), (stages, vpp, micro, stage, kind, j)
            for i in range(micro):
                for j in range(vpp):
                    assert order.index(("F", i, j)) < order.index(("B", i, j))
    with pytest.raises(ValueError, match="accumulate_steps \\(3\\) to be a multiple of the number of pipeline "
                                         "stages \\(2\\)"):
        vpp_order(3, 0, 2, 2)


def test_vpp_layouts_that_do_not_fit_are_errors_at_to_static():
    from oar.distributed import ProcessMesh
    meshes = [ProcessMesh([0], dim_names=["pp"]), ProcessMesh([1], dim_names=["pp"]),
              ProcessMesh([0, 1], dim_names=["pp"])]

    def seq(layout):
        items = [oar.nn.Linear(2, 2) for _ in layout]
        for item, m in zip(items, layout):
            dist.shard_layer(item, meshes[m])
        s = oar.nn.Sequential(*items)
        return s, oar.optimizer.SGD(0.1, parameters=s.parameters())

    def to_static(layout, micro=4, vpp=1):
        s, opt = seq(layout)
        strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": "VPP", "accumulate_steps": micro,
                                               "vpp_degree": vpp}})
        return dist.to_static(s, None, lambda o, y: ((o - y) ** 2).mean(), opt, strategy=strategy)
    to_static([0, 1, 0, 1])  # fits: 2 stages x 2 chunks
    with pytest.raises(ValueError, match="vpp_degree is 3, but the layer's 4 chunks on 2 stages make 2"):
        to_static([0, 1, 0, 1], vpp=3)
    with pytest.raises(ValueError, match=r"accumulate_steps \(3\) to be a multiple of the number of pipeline "
                                         r"stages \(2\)"):
        to_static([0, 1, 0, 1], micro=3)
    with pytest.raises(ValueError, match="3 chunks do not divide into 2 stages"):
        to_static([0, 1, 1, 0])  # the middle two are one chunk
    with pytest.raises(ValueError, match=r"meshes to repeat in stage order \(chunk c on stage c % 3\); got chunk "
                                         r"meshes \[\(0,\), \(1,\), \(0, 1\), \(1,\), \(0,\), \(0, 1\)\]"):
        to_static([0, 1, 2, 1, 0, 2], micro=6)


def test_bad_pipeline_arguments_name_them():
    from oar.distributed.auto_parallel.pipelining import PipelineStage, Schedule1F1B, ScheduleFThenB
    lin = oar.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="layer must be an nn.Layer"):
        PipelineStage(lambda x: x, 0, 1)
    with pytest.raises(ValueError, match="stage_index 2 must be in \\[0, num_stages=2\\)"):
        PipelineStage(lin, 2, 2)
    with pytest.raises(ValueError, match="stage 1 runs on rank 1, but this is rank 0"):
        PipelineStage(lin, 1, 2)
    with pytest.raises(TypeError, match="num_stages must be an int"):
        PipelineStage(lin, 0, 1.0)
    stage = PipelineStage(lin, 0, 1)
    with pytest.raises(ValueError, match="n_microbatches must be a positive int, got 0"):
        ScheduleFThenB(stage, 0)
    with pytest.raises(TypeError, match="stage must be a PipelineStage"):
        Schedule1F1B(lin, 2)
    sched = ScheduleFThenB(stage, 3, loss_fn=lambda out, y: ((out - y) ** 2).mean())
    with pytest.raises(ValueError, match="shape \\[4, 2\\] does not split into 3 micro-batches"):
        sched.step(oar.ones([4, 2]), target=oar.ones([4, 2]))
    with pytest.raises(ValueError, match="needs target="):
        sched.step(oar.ones([3, 2]))


def test_one_stage_schedule_accumulates_micro_batch_gradients():
    """With one stage a schedule is gradient accumulation: the micro-batches' gradients sum."""
    from oar.distributed.auto_parallel.pipelining import PipelineStage, Schedule1F1B
    import numpy as np
    oar.seed(2)
    lin = oar.nn.Linear(3, 2)
    x, y = oar.randn([6, 3]), oar.randn([6, 2])
    ((lin(x) - y) ** 2).mean().backward()
    want = lin.weight.grad.numpy().copy()
    lin.clear_gradients()
    losses = []
    sched = Schedule1F1B(PipelineStage(lin, 0, 1), 3, loss_fn=lambda out, t: ((out - t) ** 2).mean() / 3)
    out = sched.step(x, target=y, losses=losses, return_output=True)
    np.testing.assert_allclose(lin.weight.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(losses) == 3 and list(out.shape) == [6, 2]


class _Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.inp = oar.nn.Linear(3, 4)
        self.layers = oar.nn.LayerList([oar.nn.Linear(4, 4) for _ in range(3)])
        self.out = oar.nn.Linear(4, 2)

    def forward(self, x):
        x = self.inp(x)
        for layer in self.layers:
            x = oar.tanh(layer(x))
        return self.out(x)


def test_bad_pp_configs_name_what_is_wrong():
    from oar.distributed import ProcessMesh, SplitPoint
    net = _Net()
    mesh = ProcessMesh([0], dim_names=["pp"])
    cases = [
        ({"split_spec": "blocks"}, ValueError, "split_spec 'blocks' is not a sublayer"),
        ({"split_spec": {"layers.0": SplitPoint.END}}, ValueError, "1 split points for a 'pp' axis of 1 stages"),
        ({"split_spec": {"layers.9": SplitPoint.END}}, ValueError, "split point 'layers.9' is not a sublayer"),
        ({"split_spec": {"layers.0": "end"}}, TypeError, "must be a SplitPoint, got 'end'"),
        ({"split_spec": 3}, TypeError, "split_spec must be a LayerList's name or a dict"),
        ({"split": "layers"}, ValueError, "pp_config must be \\{'split_spec'"),
        ({"global_spec": "inp"}, ValueError, "pp_config needs 'split_spec'"),
        ({"split_spec": {}, "global_spec": "inp"}, NotImplementedError, "global_spec 'inp' has trainable"),
        ({"split_spec": {}, "global_spec": "nope"}, ValueError, "global_spec 'nope' is not a sublayer"),
    ]
    for config, exc, words in cases:
        with pytest.raises(exc, match=words):
            dist.parallelize(_Net(), None, mesh, {"pp_config": config})
    with pytest.raises(ValueError, match="needs a mesh axis named 'pp'"):
        dist.parallelize(net, None, ProcessMesh([0], dim_names=["dp"]), {"pp_config": {"split_spec": "layers"}})
    with pytest.raises(TypeError, match="config must be a dict"):
        dist.parallelize(net, None, mesh, [("pp_config", {})])


def test_one_stage_pp_config_trains_like_the_plain_model():
    """A 'pp' axis of size 1: every layer on stage 0's mesh, the same training as without it."""
    import numpy as np
    from oar.distributed import ProcessMesh
    oar.seed(3)
    a = _Net()
    b = _Net()
    b.set_state_dict(a.state_dict())
    oa = oar.optimizer.Adam(learning_rate=0.05, parameters=a.parameters())
    ob = oar.optimizer.Adam(learning_rate=0.05, parameters=b.parameters())
    b, ob = dist.parallelize(b, ob, ProcessMesh([0], dim_names=["pp"]), {"pp_config": {"split_spec": "layers"}})
    assert b.layers[2].weight.process_mesh == ProcessMesh([0], dim_names=["pp"])
    x, y = oar.randn([5, 3]), oar.randn([5, 2])
    for _ in range(3):
        for net, opt in ((a, oa), (b, ob)):
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
            opt.clear_grad()
    for k, v in a.state_dict().items():
        np.testing.assert_allclose(b.state_dict()[k]._local_value().numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


def test_hybrid_parallel_clip_grad_bad_arguments_and_one_process():
    """HybridParallelClipGrad: bad arguments name the class and the type; on a one-rank world
    (no job) it clips exactly as ClipGradByGlobalNorm does."""
    import numpy as np
    from oar.distributed.fleet import HybridParallelClipGrad
    with pytest.raises(TypeError, match="HybridParallelClipGrad: clip must be a ClipGradByGlobalNorm, got "
                                        "ClipGradByNorm"):
        HybridParallelClipGrad(oar.nn.ClipGradByNorm(1.0))
    with pytest.raises(TypeError, match="HybridParallelClipGrad: group must be a Group.*got str"):
        HybridParallelClipGrad(oar.nn.ClipGradByGlobalNorm(1.0), "pp")
    if dist.is_initialized():
        pytest.skip("a job is running in this process")
    rng = np.random.default_rng(0)
    for clip_norm in (0.5, 100.0):
        ps = [oar.create_parameter([3, 4], "float64"), oar.create_parameter([5], "float64")]
        gs = [oar.to_tensor(rng.standard_normal(p.shape)) for p in ps]
        want = oar.nn.ClipGradByGlobalNorm(clip_norm)(list(zip(ps, gs)))
        got = HybridParallelClipGrad(oar.nn.ClipGradByGlobalNorm(clip_norm))(list(zip(ps, gs)))
        for (_, w), (_, g) in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-14)


def test_pipeline_layer_segments_lays_out_and_checks_its_arguments():
    """fleet.meta_parallel: Paddle's segmentation (uniform: the remainder to the last parts;
    layer:<regex>: parts start at matching layers), chunk c on stage c % num_stages, a
    VPP to_static that fits and one that does not, one stage equal to the plain layers, and
    bad arguments naming what is wrong."""
    import numpy as np
    from oar.distributed import ProcessMesh
    from oar.distributed.fleet.meta_parallel import LayerDesc, PipelineLayer, segment
    assert segment(list(range(10)), 4, "uniform") == [0, 2, 4, 7, 10]
    assert segment(list(range(4)), 4, "uniform") == [0, 1, 2, 3, 4]
    items = [oar.nn.Tanh(), oar.nn.Linear(2, 2), oar.nn.Tanh(), oar.nn.Linear(2, 2), oar.nn.Linear(2, 2),
             oar.nn.Linear(2, 2)]
    assert segment(items, 2, "layer:Linear") == [0, 4, 6]
    with pytest.raises(ValueError, match="seg_method 'layer:Linear' matches 4 layers, which do not divide into 3"):
        segment(items, 3, "layer:Linear")
    with pytest.raises(ValueError, match="6 layers cannot make 8 chunks"):
        segment(items, 8, "uniform")
    with pytest.raises(ValueError, match="seg_method must be 'uniform' or 'layer:<class name regex>', got 'even'"):
        segment(items, 2, "even")

    oar.seed(3)
    descs = [LayerDesc(oar.nn.Linear, 2, 2) for _ in range(4)]
    pl = PipelineLayer(descs, num_stages=2, num_virtual_pipeline_stages=2)
    assert [c.mesh.process_ids for c in pl.chunks] == [[0], [1], [0], [1]]
    assert all(p.process_mesh == pl.chunks[i].mesh for i in range(4) for p in pl.chunks[i].parameters())
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": "VPP", "accumulate_steps": 4,
                                           "vpp_degree": 2}})
    opt = oar.optimizer.SGD(0.1, parameters=pl.parameters())
    dist.to_static(pl, None, lambda o, y: ((o - y) ** 2).mean(), opt, strategy=strategy)  # fits
    strategy.pipeline.vpp_degree = 4
    with pytest.raises(ValueError, match="vpp_degree is 4, but the layer's 4 chunks on 2 stages make 2"):
        dist.to_static(pl, None, lambda o, y: ((o - y) ** 2).mean(), opt, strategy=strategy)

    # one stage (this process): the chunks in order are the plain layers
    layers = [oar.nn.Linear(3, 4), oar.nn.Tanh(), lambda t: t * 2.0, oar.nn.Linear(4, 2)]
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    want = oar.to_tensor(x)
    for f in layers:
        want = f(want)
    one = PipelineLayer(layers, mesh=ProcessMesh([0], dim_names=["pp"]), seg_method="layer:Linear")
    assert one.segment_parts == [0, 4] and one.get_num_stages() == 1
    np.testing.assert_allclose(dist.unshard_dtensor(one(oar.to_tensor(x))).numpy(), want.numpy(), rtol=1e-6)

    with pytest.raises(ValueError, match="num_stages 3 differs from the mesh's 'pp' axis size 2"):
        PipelineLayer(descs, num_stages=3, mesh=ProcessMesh([0, 1], dim_names=["pp"]))
    with pytest.raises(NotImplementedError, match="PipelineLayer: topology and recompute_interval"):
        PipelineLayer(descs, num_stages=2, topology=object())
    with pytest.raises(TypeError, match="PipelineLayer: a layer must be an nn.Layer, a LayerDesc or a function, got 3"):
        PipelineLayer([3], num_stages=1)
    with pytest.raises(ValueError, match="num_virtual_pipeline_stages must be a positive int, got 0"):
        PipelineLayer(descs, num_stages=2, num_virtual_pipeline_stages=0)
    with pytest.raises(ValueError, match="give num_stages, or a mesh with a 'pp' axis"):
        PipelineLayer(descs)
    with pytest.raises(TypeError, match="LayerDesc: layer_func must be an nn.Layer subclass"):
        LayerDesc(len)


@pytest.mark.parametrize("schedule,clip", [("FThenB", True), ("1F1B", False)])
def test_pp_with_gradient_merge_compiles_and_trains_like_one_process(schedule, clip, tmp_path):
    """pp=2, 2 micro-batches and gradient_merge k_steps=2 through dist.to_static: compiled (no
    eager fallback), 10 merged steps equal to one process; with clip the global norm spans the
    stages over the merged gradients."""
    results, _ = run_ranks("pipeline.py", 2, args=["pp_merge_static", schedule] + ["clip"] * clip,
                           tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp_merge_static {schedule} ok {rank}" in out
