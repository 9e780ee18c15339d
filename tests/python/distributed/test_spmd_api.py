"""paddle.distributed auto-parallel basics in one process: ProcessMesh, placements, dist
tensor metadata, shard_tensor / dtensor_from_local (each rank cutting its own shard, ranks
taken from PADDLE_TRAINER_ID as under the launcher), and bad inputs."""
import numpy as np
import pytest

import oar
import oar.distributed as dist


def test_process_mesh_basics():
    mesh = dist.ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["dp", "mp"])
    assert mesh.shape == [2, 3] and mesh.ndim == 2
    assert mesh.process_ids == [0, 1, 2, 3, 4, 5]
    assert mesh.dim_names == ["dp", "mp"]
    assert mesh.get_dim_size("mp") == 3
    assert 4 in mesh and 6 not in mesh
    assert mesh[1].process_ids == [3, 4, 5] and mesh[1].dim_names == ["mp"]
    assert mesh[:, 0].process_ids == [0, 3] and mesh[:, 0].dim_names == ["dp"]
    assert mesh.get_mesh_with_dim("mp").shape == [3, 2]
    assert mesh.get_mesh_with_dim("mp", 1).process_ids == [1, 4]
    assert mesh == dist.ProcessMesh(shape=[2, 3], process_ids=list(range(6)), dim_names=["dp", "mp"])
    assert len({mesh, dist.ProcessMesh([[0, 1, 2], [3, 4, 5]], ["dp", "mp"])}) == 1
    assert dist.ProcessMesh([0, 1]).dim_names == ["d0"]


@pytest.mark.parametrize("rank", [0, 5])
def test_process_mesh_get_submesh_with_dim(rank, monkeypatch):
    """The 1-d sub-mesh along an axis through this process (Paddle's example, ranks 0 and 5),
    None outside the mesh, and an unknown axis named."""
    monkeypatch.setenv("PADDLE_TRAINER_ID", str(rank))
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "8")
    m2 = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "tp"])
    m3 = dist.ProcessMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], dim_names=["pp", "dp", "tp"])
    want = {0: {"dp": [0, 4], "tp": [0, 1, 2, 3], "pp3": [0, 4], "dp3": [0, 2], "tp3": [0, 1]},
            5: {"dp": [1, 5], "tp": [4, 5, 6, 7], "pp3": [1, 5], "dp3": [5, 7], "tp3": [4, 5]}}[rank]
    for name in ("dp", "tp"):
        sub = m2.get_submesh_with_dim(name)
        assert sub.process_ids == want[name] and sub.dim_names == [name], (name, sub)
    for name in ("pp", "dp", "tp"):
        sub = m3.get_submesh_with_dim(name)
        assert sub.process_ids == want[name + "3"] and sub.dim_names == [name], (name, sub)
    assert dist.ProcessMesh([1, 2], ["x"]).get_submesh_with_dim("x") is None
    assert m2.get_submesh_with_dim("tp", 1).process_ids == [1, 5]  # with index: get_mesh_with_dim's
    with pytest.raises(ValueError, match="no axis named 'mp'"):
        m2.get_submesh_with_dim("mp")


def test_dist_attr_layout_and_bad_specs():
    mesh = dist.ProcessMesh([[2, 4, 5], [0, 1, 3]], dim_names=["x", "y"])
    a = dist.DistAttr(mesh=mesh, sharding_specs=["x", "y"])
    assert a.dims_mapping == [0, 1] and a.placements == [dist.Shard(0), dist.Shard(1)]
    b = dist.DistAttr(mesh, [None, "x", None])
    assert b.dims_mapping == [-1, 0, -1] and b.placements == [dist.Shard(1), dist.Replicate()]
    assert "sharding_specs=['x', 'y']" in repr(a) and a == dist.DistAttr(mesh, ("x", "y")) and a != b
    with pytest.raises(ValueError, match="sharding spec 'z' is not an axis of the mesh"):
        dist.DistAttr(mesh, ["z"])
    with pytest.raises(ValueError, match="a mesh axis may split one tensor dimension only"):
        dist.DistAttr(mesh, ["x", "x"])
    with pytest.raises(TypeError, match="mesh must be a ProcessMesh"):
        dist.DistAttr([0, 1], ["x"])
    with pytest.raises(TypeError, match="each sharding spec must be a mesh axis name or None, got 0"):
        dist.DistAttr(mesh, [0])


def test_is_available():
    assert dist.is_available() is bool(oar._C.distributed.available)


@pytest.mark.parametrize("mesh, dim_names, match", [
    ([0, 0], None, "appears more than once"),
    ([0, -1], None, "negative"),
    ([[0, 1], [2, 3]], ["a"], "dim_names"),
    ([[0, 1], [2, 3]], ["a", "a"], "repeat"),
])
def test_bad_meshes_raise(mesh, dim_names, match):
    with pytest.raises(ValueError, match=match):
        dist.ProcessMesh(mesh, dim_names)


def test_placements():
    assert dist.Shard(1) == dist.Shard(1) and dist.Shard(1) != dist.Shard(0)
    assert dist.Shard(0).is_shard() and dist.Shard(0).is_shard(0) and not dist.Shard(0).is_shard(1)
    assert dist.Replicate().is_replicated() and dist.Partial().is_partial()
    assert dist.Partial().reduce_type() == dist.ReduceType.kRedSum
    assert dist.Partial(dist.ReduceType.kRedMax) != dist.Partial()
    assert repr(dist.Shard(2)) == "Shard(dim=2)"
    assert isinstance(dist.Shard(0), dist.Placement)
    with pytest.raises(TypeError):
        dist.Shard("0")
    with pytest.raises(ValueError):
        dist.Partial(9)


def test_shard_tensor_metadata_single_process():
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    x = np.arange(12.0).reshape(4, 3)
    d = dist.shard_tensor(x, mesh, [dist.Shard(0)])
    assert d.is_dist() and not oar.to_tensor(x).is_dist()
    assert d.placements == [dist.Shard(0)]
    assert d.process_mesh == mesh
    assert d._global_shape == [4, 3]
    np.testing.assert_array_equal(d._local_value().numpy(), x[:2])
    assert not d._local_value().is_dist()
    assert oar.to_tensor(x).placements is None and oar.to_tensor(x).process_mesh is None
    with pytest.raises(ValueError, match="not a dist tensor"):
        oar.to_tensor(x)._local_value()


def _assemble(shards, mesh, placements, shape):
    """Global value from every rank's local shard (all axes Shard/Replicate/Partial sum)."""
    from oar import _C
    out = np.zeros(shape)
    for pid, s in shards.items():
        lshape, off = _C.dist.local_shard(list(shape), mesh.shape, mesh.process_ids,
                                          [p._encode() for p in placements], pid)
        assert list(s.shape) == list(lshape)
        region = tuple(slice(o, o + n) for o, n in zip(off, lshape))
        if any(p.is_partial() for p in placements):
            out[region] += s
        else:
            out[region] = s
    return out


@pytest.mark.parametrize("placements", [
    [dist.Shard(0), dist.Shard(1)], [dist.Shard(1), dist.Replicate()], [dist.Replicate(), dist.Shard(0)],
    [dist.Partial(), dist.Shard(1)],
])
def test_each_rank_cuts_its_shard(monkeypatch, placements):
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    x = np.random.default_rng(0).standard_normal((5, 3))  # uneven on both dims
    shards = {}
    for rank in mesh.process_ids:
        monkeypatch.setenv("PADDLE_TRAINER_ID", str(rank))
        d = dist.shard_tensor(oar.to_tensor(x), mesh, placements)
        assert d._global_shape == [5, 3] and d.placements == placements
        shards[rank] = d._local_value().numpy()
    if placements[0].is_partial():
        # coordinate 0 on the Partial axis holds the value, the others zeros
        assert not shards[2].any()
    np.testing.assert_allclose(_assemble(shards, mesh, placements, (5, 3)), x)


def test_rank_outside_mesh_holds_nothing(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    d = dist.shard_tensor(np.ones((4, 2)), dist.ProcessMesh([0, 1]), [dist.Shard(0)])
    assert d._local_value().numel() == 0 and d._global_shape == [4, 2]


def test_dtensor_from_local_and_fn():
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    local = oar.to_tensor(np.ones((2, 3)))
    d = dist.dtensor_from_local(local, mesh, [dist.Shard(1), dist.Shard(0)])
    assert d._global_shape == [4, 6]
    assert d.placements == [dist.Shard(1), dist.Shard(0)]
    np.testing.assert_array_equal(d._local_value().numpy(), np.ones((2, 3)))
    f = dist.dtensor_from_fn(oar.ones, mesh, [dist.Replicate(), dist.Replicate()], [3, 2])
    assert f._global_shape == [3, 2] and f._local_value().shape == [3, 2]


def test_stop_gradient_follows_the_input():
    mesh = dist.ProcessMesh([0, 1])
    x = oar.to_tensor(np.ones((4,)), stop_gradient=False)
    assert not dist.shard_tensor(x, mesh, [dist.Shard(0)]).stop_gradient
    assert dist.shard_tensor(x, mesh, [dist.Shard(0)], stop_gradient=True).stop_gradient


@pytest.mark.parametrize("placements, match", [
    ([dist.Shard(0)], "1 placements .* for a 2-d mesh"),
    ([dist.Shard(2), dist.Replicate()], r"Shard\(dim=2\) .* out of range"),
    ([dist.Shard(0), dist.Shard(0)], "sharded by mesh axes"),
])
def test_bad_placements_raise(placements, match):
    mesh = dist.ProcessMesh([[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=match):
        dist.shard_tensor(np.ones((4, 4)), mesh, placements)
    with pytest.raises(ValueError, match=match):
        dist.dtensor_from_local(oar.ones([2, 2]), mesh, placements)


def test_bad_arguments_raise():
    mesh = dist.ProcessMesh([0, 1])
    with pytest.raises(TypeError, match="mesh must be a ProcessMesh"):
        dist.shard_tensor(np.ones(2), [0, 1], [dist.Shard(0)])
    with pytest.raises(TypeError, match="Shard/Replicate/Partial"):
        dist.shard_tensor(np.ones(2), mesh, ["S0"])
    d = dist.shard_tensor(np.ones(2), mesh, [dist.Shard(0)])
    with pytest.raises(ValueError, match="already a dist tensor"):
        dist.shard_tensor(d, mesh, [dist.Shard(0)])


def test_set_get_mesh():
    mesh = dist.ProcessMesh([0, 1])
    old = dist.get_mesh()
    try:
        dist.set_mesh(mesh)
        assert dist.get_mesh() is mesh
        with pytest.raises(TypeError):
            dist.set_mesh([0, 1])
    finally:
        dist.set_mesh(old)


def test_infer_spmd_and_the_fallback():
    from oar import _C
    mesh = dist.ProcessMesh([0, 1])
    ins, outs = dist.infer_spmd("matmul", mesh, [((4, 6), [dist.Shard(1)]), ((6, 8), [dist.Replicate()])])
    assert ins == [[dist.Shard(1)], [dist.Shard(0)]] and outs == [[dist.Partial()]]
    assert _C.dist.spmd_rule_name("log_softmax") == "softmax"
    ins, outs = dist.infer_spmd("unique", mesh, [((6,), [dist.Shard(0)])])
    assert ins == [[dist.Replicate()]]
    assert "unique" in _C.dist.replicated_fallback_ops()
    with pytest.raises(ValueError, match="dims_mapping"):
        _C.dist.infer_spmd("exp", [2], [([4], [0, 0], {})], {})
    with pytest.raises(TypeError, match="attribute 'axis'"):
        dist.infer_spmd("sum", mesh, [((4,), [dist.Shard(0)])], {"axis": "x"})
