"""paddle.distributed.save_state_dict / load_state_dict (workers/checkpoint.py): saved on 4
ranks (dp x mp), loaded on 2 ranks with other placements and in one process with dense
tensors, unchanged; versions, commit marker and bad inputs."""
import os

import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks
from workers.checkpoint import global_values

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ckpt")
    path = str(tmp / "ckpt")
    results, _ = run_ranks("checkpoint.py", 4, args=["save", path], tmp_path=tmp)
    assert_all_ok(results)
    return path


def test_four_rank_checkpoint_loads_on_two_ranks_with_other_placements(saved, tmp_path):
    results, _ = run_ranks("checkpoint.py", 2, args=["load", saved], tmp_path=tmp_path)
    assert_all_ok(results)
    assert all(f"load ok {r}" in out for r, (_, out) in enumerate(results))


def test_each_element_is_written_once(saved):
    files = sorted(f for f in os.listdir(saved) if f.endswith("_0.distcp"))
    pieces = {}
    for f in files:
        for key, t in oar.load(os.path.join(saved, f)).items():
            name = key.split("@")[0].replace("opt.", "")
            pieces[name] = pieces.get(name, 0) + int(np.prod(t.shape))
    g = global_values()
    assert pieces == {k: v.size for k, v in g.items()}, pieces


def test_loads_in_one_process_into_dense_tensors(saved):
    g = global_values()
    sd = {k: oar.zeros(list(v.shape), dtype=str(v.dtype)) for k, v in g.items() if k != "m"}
    sd["opt"] = {"m": oar.zeros([6, 8], dtype="float64"), "step": 0, "lr": 0.0}
    dist.load_state_dict(sd, saved, unique_id=0)
    for k, v in g.items():
        got = (sd["opt"]["m"] if k == "m" else sd[k]).numpy()
        np.testing.assert_array_equal(got, v, err_msg=k)
    assert sd["opt"]["step"] == 20 and sd["opt"]["lr"] == 0.5


def test_newest_version_is_the_default_and_ids_select(saved):
    w = oar.zeros([6, 8], dtype="float64")
    dist.load_state_dict({"w": w}, saved)  # newest committed: unique_id 7
    np.testing.assert_array_equal(w.numpy(), global_values()["w"])
    with pytest.raises(KeyError, match="'b'"):  # version 7 holds only w
        dist.load_state_dict({"b": oar.zeros([8])}, saved)
    with pytest.raises(FileNotFoundError, match="unique_id=3.*committed ids: \\[0, 7\\]"):
        dist.load_state_dict({"w": w}, saved, unique_id=3)


def test_uncommitted_or_damaged_checkpoints_are_errors(saved, tmp_path):
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(saved, broken)
    os.remove(broken / "7.metadata")  # a save cut short before its commit marker
    os.remove(broken / "0.metadata")
    with pytest.raises(FileNotFoundError, match="no committed checkpoint"):
        dist.load_state_dict({"w": oar.zeros([6, 8], dtype="float64")}, str(broken))
    shutil.copy(os.path.join(saved, "0.metadata"), broken / "0.metadata")
    os.remove(broken / "1_0.distcp")
    with pytest.raises(FileNotFoundError, match="1_0.distcp"):
        dist.load_state_dict({"w": oar.zeros([6, 8], dtype="float64")}, str(broken))
    import json
    meta = json.loads((broken / "0.metadata").read_text())
    meta["tensors"]["w"]["pieces"][0]["offset"] = [-1]
    (broken / "0.metadata").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="malformed entry for 'w'"):
        dist.load_state_dict({"w": oar.zeros([6, 8], dtype="float64")}, str(broken))
    (broken / "0.metadata").write_bytes(b"{not json")
    with pytest.raises(ValueError, match="0.metadata"):
        dist.load_state_dict({"w": oar.zeros([6, 8], dtype="float64")}, str(broken))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        dist.load_state_dict({}, str(tmp_path / "nowhere"))


def test_mismatched_shapes_dtypes_and_types_name_the_key(saved):
    with pytest.raises(ValueError, match="'w' has shape \\[6, 9\\].*\\[6, 8\\]"):
        dist.load_state_dict({"w": oar.zeros([6, 9], dtype="float64")}, saved, unique_id=0)
    with pytest.raises(ValueError, match="'w' has dtype float32.*float64"):
        dist.load_state_dict({"w": oar.zeros([6, 8])}, saved, unique_id=0)
    with pytest.raises(TypeError, match="'w'"):
        dist.load_state_dict({"w": np.zeros((6, 8))}, saved, unique_id=0)
    with pytest.raises(TypeError, match="state_dict"):
        dist.save_state_dict([oar.ones([2])], saved)
    with pytest.raises(TypeError, match="'x'.*list"):
        dist.save_state_dict({"x": [1, 2]}, saved)
    with pytest.raises(ValueError, match="coordinator_rank"):
        dist.save_state_dict({"x": oar.ones([2])}, saved, coordinator_rank=3)


def test_save_then_load_round_trip_in_one_process(tmp_path):
    mesh = dist.ProcessMesh([0], dim_names=["x"])
    x = np.arange(12.0).reshape(3, 4)
    sd = {"a": dist.shard_tensor(x, mesh, [dist.Shard(1)]), "z": oar.zeros([0, 3])}
    dist.save_state_dict(sd, str(tmp_path))
    back = {"a": dist.shard_tensor(np.zeros((3, 4)), mesh, [dist.Replicate()]), "z": oar.ones([0, 3])}
    dist.load_state_dict(back, str(tmp_path))
    np.testing.assert_array_equal(back["a"].numpy(), x)
    assert list(back["z"].shape) == [0, 3]
