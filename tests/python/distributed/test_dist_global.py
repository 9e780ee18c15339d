"""DistModel's global program (Note [DistModel]): the step traced serially with global shapes
and dist.shard_annotate ops (workers/dist_global.py on 2 processes; one process here), run by
one process without the dist passes to the serial model's loss; bad placements name the tensor."""
import re

import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Replicate, Shard
from oar.distributed.auto_parallel import static_global
from oar.distributed.auto_parallel.static_program import fused_optimizer

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("mode", ["dp", "mp"])
def test_global_program_on_two_processes(mode, tmp_path):
    results, _ = run_ranks("dist_global.py", 2, args=[mode], tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"global {mode} ok {rank}" in out


@pytest.mark.parametrize("mode,nprocs", [("dp", 2), ("mp", 2), ("sharding", 2), ("hybrid", 4)])
def test_the_compiled_step_trains_like_the_eager_step(mode, nprocs, tmp_path):
    results, _ = run_ranks("dist_paths.py", nprocs, args=[mode], tmp_path=tmp_path, timeout=400)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"paths {mode} ok {rank}" in out


class _Net(oar.nn.Layer):
    """Linear, then a user reshard of the hidden activation, then Linear."""

    def __init__(self, mesh, placements):
        super().__init__()
        self.fc1, self.fc2 = oar.nn.Linear(4, 6), oar.nn.Linear(6, 3)
        self.mesh, self.placements = mesh, placements

    def forward(self, x):
        h = oar.tanh(self.fc1(x))
        return self.fc2(h if self.mesh is None else dist.reshard(h, self.mesh, self.placements))


def _mse(o, y):
    return ((o - y) ** 2).mean()


def test_global_program_in_one_process_runs_to_the_serial_loss():
    """A 1-process dp mesh: the train step's global program (annotations on the inputs, the
    parameters, the states, the user reshard, the loss and the gradients) run alone gives the
    serial model's loss and update; the tensors keep their layouts after the trace."""
    oar.set_default_dtype("float64")
    try:
        mesh = ProcessMesh([0], dim_names=["dp"])
        oar.seed(2)
        net = _Net(mesh, [Replicate()])
        ref = _Net(None, None)  # the serial model
        ref.set_state_dict(net.state_dict())
        opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
        net, opt = dist.parallelize(net, opt, mesh, {"dp_config": {"sharding_level": 0}})
        x, y = oar.randn([5, 4]), oar.randn([5, 3])
        step = static_global.trace_global("train", net, _mse, [dist.shard_tensor(x, mesh, [Shard(0)]),
                                                               dist.shard_tensor(y, mesh, [Shard(0)])],
                                          optimizer=fused_optimizer(opt))
        text = str(step.program)
        ann = re.findall(r'"dist\.shard_annotate"\(%\d+\) \{placements = (#dist\.placements<[^>]*>)\}', text)
        # x, y; 4 parameters; 8 Adam moments; the user reshard; the loss; 4 gradients
        assert len(ann) == 2 + 4 + 8 + 1 + 1 + 4, (len(ann), text)
        assert net.fc1.weight.is_dist() and net.fc1.weight.placements == [Replicate()]
        named = {n: oar.to_tensor(v.numpy()) for n, v in ref.state_dict().items()}
        for name, t in step.opt_state:
            named[name] = oar.zeros(list(t.shape))
        (loss,) = static_global.run_serial(step.program, [x, y, oar.to_tensor(0.05, dtype="float64"),
                                                          oar.to_tensor(1, dtype="int64")], named)
        want = _mse(ref(x), y)
        want.backward()
        oar.optimizer.Adam(learning_rate=0.05, parameters=ref.parameters()).step()
        assert abs(float(loss.numpy()) - float(want.numpy())) <= 1e-12
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(named[k].numpy(), v.numpy(), rtol=1e-12, atol=1e-12, err_msg=k)
    finally:
        oar.set_default_dtype("float32")


def test_a_shard_dim_out_of_range_names_the_tensor():
    mesh = ProcessMesh([0], dim_names=["dp"])
    net = _Net(mesh, [Shard(2)])  # the hidden activation is 2-d
    x, y = oar.randn([5, 4]), oar.randn([5, 3])
    with pytest.raises(ValueError, match=r"reshard: placements \[Shard\(dim=2\)\] for a tensor of shape \[5, 6\]"):
        static_global.trace_global("eval", net, _mse, [x, y])

    class Bad(oar.nn.Layer):  # a parameter resharded inside the traced code
        def __init__(self):
            super().__init__()
            self.fc = oar.nn.Linear(4, 3)

        def forward(self, x):
            return oar.matmul(x, dist.reshard(self.fc.weight, mesh, [Shard(3)]))
    bad = Bad()
    with pytest.raises(ValueError, match=re.escape(f"reshard: placements [Shard(dim=3)] for parameter "
                                                   f"'{bad.fc.weight.name}' of shape [4, 3]")):
        static_global.trace_global("eval", bad, _mse, [x, y])
