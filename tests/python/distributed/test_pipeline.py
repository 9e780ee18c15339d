"""Cross-mesh reshard and pipeline stages (workers/pipeline.py) on 2 and 4 processes."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("nprocs", [2, 4])
def test_cross_mesh_reshard_and_its_gradient(nprocs, tmp_path):
    results, _ = run_ranks("pipeline.py", nprocs, args=["cross"], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"cross ok {rank}" in out


@pytest.mark.parametrize("schedule", ["FThenB", "1F1B"])
def test_two_stage_pipeline_trains_like_one_process(schedule, tmp_path):
    results, _ = run_ranks("pipeline.py", 2, args=["pp", schedule], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp {schedule} ok {rank}" in out


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
