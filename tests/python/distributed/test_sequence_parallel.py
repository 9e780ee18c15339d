"""Sequence-parallel plans (SequenceParallelBegin/End/Enable/Disable in parallelize's
mp_config): 2-process training equal to one process (workers/sequence_parallel.py), and the
plans' arguments and layouts in one process."""
import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_sequence_parallel_plans_train_like_one_process(tmp_path):
    results, _ = run_ranks("sequence_parallel.py", 2, tmp_path=tmp_path, timeout=300)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"sp ok {rank}" in out


def test_bad_sequence_parallel_arguments_name_them():
    for plan in (dist.SequenceParallelBegin, dist.SequenceParallelEnd, dist.SequenceParallelDisable):
        with pytest.raises(TypeError, match=f"{plan.__name__}: need_transpose must be a bool, got 1"):
            plan(1)
    mesh = dist.ProcessMesh([0], dim_names=["mp"])
    with pytest.raises(TypeError, match="must be a plan .* or a list of them, got 'x'"):
        dist.parallelize(oar.nn.Linear(2, 2), None, mesh, {"mp_config": {"parallelize_plan": {"*": ["x"]}}})


class _Seq(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.first, self.mid, self.last = oar.nn.Linear(3, 3), oar.nn.Linear(3, 3), oar.nn.Linear(3, 2)

    def forward(self, x):
        return self.last(self.mid(self.first(x)))


@pytest.mark.parametrize("need_transpose", [True, False])
def test_sequence_parallel_region_on_one_process_keeps_values_and_layouts(need_transpose):
    oar.seed(4)
    a = _Seq()
    b = _Seq()
    b.set_state_dict(a.state_dict())
    plan = {"first": dist.SequenceParallelBegin(need_transpose), "mid": dist.SequenceParallelDisable(need_transpose),
            "last": dist.SequenceParallelEnd(need_transpose)}
    mesh = dist.ProcessMesh([0], dim_names=["mp"])
    b, _ = dist.parallelize(b, None, mesh, {"mp_config": {"parallelize_plan": plan}})
    seen = {}
    b.mid.register_forward_post_hook(lambda layer, inputs, out: seen.update(mid=list(inputs[0].shape)))
    b.last.register_forward_post_hook(lambda layer, inputs, out: seen.update(last=list(inputs[0].shape)))
    x = oar.randn([2, 5, 3])  # [b, s, h]
    out = b(x)
    np.testing.assert_allclose(out._local_value().numpy(), a(x).numpy(), rtol=1e-6, atol=1e-6)
    assert seen == {"mid": [2, 5, 3], "last": [2, 5, 3]}  # transposed back for the layers
    assert out.placements == [dist.Replicate()]
