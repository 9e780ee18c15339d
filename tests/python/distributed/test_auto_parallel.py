"""Auto-parallel in dynamic mode over 2 (and 4) processes on loopback
(workers/auto_parallel.py): reshard, the dist layer, tensor parallelism, bad inputs."""
import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("mode", ["reshard", "ops", "mlp", "gpt", "errors"])
def test_two_processes(mode, tmp_path):
    results, _ = run_ranks("auto_parallel.py", 2, args=[mode], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"{mode} ok {rank}" in out


def test_reshard_2x2_mesh(tmp_path):
    results, _ = run_ranks("auto_parallel.py", 4, args=["reshard2d"], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"reshard2d ok {rank}" in out


def test_one_process_mesh_needs_no_job():
    """A mesh of one process: every transfer is local, no init_parallel_env needed."""
    mesh = dist.ProcessMesh([0], dim_names=["x"])
    x = np.arange(12.0).reshape(3, 4)
    t = dist.shard_tensor(x, mesh, [dist.Shard(1)], stop_gradient=False)
    y = dist.reshard(t, mesh, [dist.Partial()])
    assert y.placements == [dist.Partial()] and list(y.shape) == [3, 4]
    z = oar.matmul(y, dist.shard_tensor(np.ones((4, 2)), mesh, [dist.Replicate()]))
    np.testing.assert_allclose(dist.unshard_dtensor(z).numpy(), x @ np.ones((4, 2)))
    z.sum().backward()
    assert t.grad.placements == [dist.Shard(1)]
    np.testing.assert_allclose(t.grad.numpy(), np.full((3, 4), 2.0))


def test_transfer_between_processes_needs_a_job():
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    t = dist.shard_tensor(np.ones((4, 2)), mesh, [dist.Shard(0)])
    # (an in-process job of one, from another test, makes rank 1 outside the job instead)
    with pytest.raises(Exception, match="init_parallel_env|outside the job"):
        dist.reshard(t, mesh, [dist.Replicate()])


def test_bad_placements_name_the_values():
    mesh = dist.ProcessMesh([0], dim_names=["x"])
    t = dist.shard_tensor(np.ones((4, 2)), mesh, [dist.Replicate()])
    with pytest.raises(ValueError, match="2"):
        dist.reshard(t, mesh, [dist.Replicate(), dist.Replicate()])
    with pytest.raises(ValueError, match="Shard"):
        dist.reshard(t, mesh, [dist.Shard(5)])
    with pytest.raises(TypeError, match="reshard"):
        dist.reshard(t, mesh, [0])
