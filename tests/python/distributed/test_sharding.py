"""shard_optimizer with ShardingStage1/2/3 (workers/sharding.py): 2-process data parallel
GPT training equal to one process; bad arguments."""
import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("stage", ["1", "2", "3"])
def test_sharding_stage_trains_like_one_process(stage, tmp_path):
    results, _ = run_ranks("sharding.py", 2, args=[stage], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"stage{stage} ok {rank}" in out


def test_dp_x_mp_with_sharding_and_shard_dataloader_trains_like_one_process(tmp_path):
    results, _ = run_ranks("sharding.py", 4, args=["hybrid"], tmp_path=tmp_path, timeout=400)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"hybrid ok {rank}" in out


def test_bad_sharding_arguments_name_them():
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    lin = oar.nn.Linear(4, 4)
    opt = oar.optimizer.AdamW(parameters=lin.parameters())
    with pytest.raises(ValueError, match="sharding_mesh_dim 'mp'.*\\['dp'\\]"):
        dist.shard_optimizer(opt, dist.ShardingStage1("mp", mesh))
    with pytest.raises(ValueError, match="sharding_mesh_dim 3"):
        dist.shard_optimizer(opt, dist.ShardingStage2(3, mesh))
    with pytest.raises(TypeError, match="sharding_mesh_dim"):
        dist.ShardingStage1(1.5)
    with pytest.raises(ValueError, match="required"):
        dist.ShardingStage3()
    with pytest.raises(ValueError, match="mesh="):
        dist.shard_optimizer(oar.optimizer.SGD(parameters=oar.nn.Linear(2, 2).parameters()),
                             dist.ShardingStage1("dp"))
    with pytest.raises(NotImplementedError, match="custom shard_fn"):
        dist.shard_optimizer(opt, lambda name, p, acc: acc)


def test_stage1_in_one_process_updates_like_the_plain_optimizer():
    oar.seed(1)
    a, b = oar.nn.Linear(5, 3), oar.nn.Linear(5, 3)
    b.set_state_dict(a.state_dict())
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    oa = oar.optimizer.Adam(learning_rate=0.1, parameters=a.parameters())
    ob = dist.shard_optimizer(oar.optimizer.Adam(learning_rate=0.1, parameters=b.parameters()),
                              dist.ShardingStage1("dp", mesh))
    x = oar.randn([4, 5])
    for _ in range(3):
        for lin, opt in ((a, oa), (b, ob)):
            lin(x).square().mean().backward()
            opt.step()
            opt.clear_grad()
    for k, v in a.state_dict().items():
        assert float((v - b.state_dict()[k]._local_value()).abs().max()) < 1e-6, k
    assert ob.get_lr() == 0.1  # the wrapped optimizer's API is there


class _Pairs(oar.io.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": np.full([3], i, dtype="float32"), "y": np.int64(i)}


def test_shard_dataloader_in_one_process():
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    loader = dist.shard_dataloader(oar.io.DataLoader(_Pairs(), batch_size=2), mesh, shard_dims="dp")
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    x = batches[1]["x"]
    assert x.is_dist() and x.placements == [dist.Shard(0)] and list(x.shape) == [2, 3]
    np.testing.assert_array_equal(x.numpy()[:, 0], [2, 3])
    rep = next(iter(dist.shard_dataloader(oar.io.DataLoader(_Pairs(), batch_size=2), mesh)))
    assert rep["y"].placements == [dist.Replicate()]
    only_x = next(iter(dist.shard_dataloader(oar.io.DataLoader(_Pairs(), batch_size=2), [mesh],
                                             input_keys=["x"], shard_dims="dp")))
    assert only_x["x"].is_dist() and not only_x["y"].is_dist()


def test_bad_shard_dataloader_and_dp_config_arguments_name_them():
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    loader = oar.io.DataLoader(_Pairs(), batch_size=2)
    with pytest.raises(ValueError, match="shard_dims 'mp'.*\\['dp'\\]"):
        dist.shard_dataloader(loader, mesh, shard_dims="mp")
    with pytest.raises(ValueError, match="shard_dims 5"):
        dist.shard_dataloader(loader, mesh, shard_dims=5)
    with pytest.raises(TypeError, match="DataLoader"):
        dist.shard_dataloader([1, 2], mesh, shard_dims="dp")
    with pytest.raises(ValueError, match="is_dataset_splitted"):
        dist.shard_dataloader(loader, mesh, is_dataset_splitted=True)
    with pytest.raises(KeyError, match="'z'"):
        next(iter(dist.shard_dataloader(loader, mesh, input_keys=["z"], shard_dims="dp")))
    lin = oar.nn.Linear(2, 2)
    opt = oar.optimizer.SGD(parameters=lin.parameters())
    with pytest.raises(ValueError, match="sharding_level must be 0, 1, 2 or 3, got 4"):
        dist.parallelize(lin, opt, mesh, {"dp_config": {"sharding_level": 4}})
    with pytest.raises(ValueError, match="axis named 'dp'.*\\['x'\\]"):
        dist.parallelize(lin, opt, dist.ProcessMesh([0], dim_names=["x"]), {"dp_config": {"sharding_level": 1}})
    with pytest.raises(NotImplementedError, match="pp_config"):
        dist.parallelize(lin, opt, mesh, {"pp_config": {"split_spec": "x"}})
