"""DistModel's global program as each rank of a 2-process job (test_dist_global.py): a 2-layer
MLP laid out dp (`dp`: the batch split) or mp (`mp`: column- then row-parallel) traced into the
serial program with global shapes and a dist.shard_annotate after each dist input, parameter and
optimizer state; each rank then runs that program alone (no dist passes, the whole tensors
bound) and gets the serial model's loss and update."""
import re
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Shard
from oar.distributed.auto_parallel import static_global
from oar.distributed.auto_parallel.static_program import fused_optimizer


class MLP(oar.nn.Layer):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.fc1 = oar.nn.Linear(d, h)
        self.fc2 = oar.nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(oar.nn.functional.gelu(self.fc1(x)))


def mse(o, y):
    return ((o - y) ** 2).mean()


def main(mode):
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    oar.seed(4)
    ref = MLP()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    rng = np.random.default_rng(7)
    xs, ys = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))

    model = MLP()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
    mesh = ProcessMesh([0, 1], dim_names=[mode])
    x, y = oar.to_tensor(xs), oar.to_tensor(ys)
    if mode == "dp":
        model, opt = dist.parallelize(model, opt, mesh, {"dp_config": {"sharding_level": 0}})
        x, y = dist.shard_tensor(x, mesh, [Shard(0)]), dist.shard_tensor(y, mesh, [Shard(0)])
    else:
        plan = {"fc1": dist.ColWiseParallel(), "fc2": dist.RowWiseParallel()}
        model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": plan}})
    step = static_global.trace_global("train", model, mse, [x, y], optimizer=fused_optimizer(opt))
    text = str(step.program)
    check_text(mode, text)
    # the layouts are back after the trace: same objects, local shards, dist metadata
    w = model.fc1.weight
    assert w.is_dist() and list(w.shape) == [8, 16], (w.is_dist(), w.shape)
    assert w._local_value().shape == ([8, 16] if mode == "dp" else [8, 8]), w._local_value().shape
    if mode == "dp":
        assert x._local_value().shape == [4, 8]

    # one process runs the global program alone: the whole tensors bound by name
    named = {n: oar.to_tensor(v) for n, v in state.items()}
    params = fused_optimizer(opt)._parameter_list
    for name, _ in step.opt_state:  # AdamW's moments, zero before the first step
        named[name] = oar.zeros(params[int(name[3:name.index(".")])]._global_shape)
    lr, count = oar.to_tensor(1e-2, dtype="float64"), oar.to_tensor(1, dtype="int64")
    (loss,) = static_global.run_serial(step.program, [oar.to_tensor(xs), oar.to_tensor(ys), lr, count], named)
    want = mse(ref(oar.to_tensor(xs)), oar.to_tensor(ys))
    want.backward()
    ref_opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=ref.parameters())
    ref_opt.step()
    assert abs(float(loss.numpy()) - float(want.numpy())) <= 1e-12, (float(loss.numpy()), float(want.numpy()))
    for k, v in ref.state_dict().items():  # the update, written into the bound tensors
        np.testing.assert_allclose(named[k].numpy(), v.numpy(), rtol=1e-12, atol=1e-12, err_msg=k)
    print(f"global {mode} ok {rank}", flush=True)
    dist.destroy_process_group()


def check_text(mode, text):
    """Global shapes, and right after each dist input, parameter and state its annotation
    (mp: the column-parallel weight Shard(1), the row-parallel one Shard(0); dp: the batch
    Shard(0), the parameters Replicate)."""
    lines = text.splitlines()
    annotated = {}  # declared name -> placements of the annotation on the next line
    for i, line in enumerate(lines):
        d = re.match(r'\s*(%\d+) = "builtin\.(input|parameter)"\(\) \{name = "([^"]+)"\}', line)
        if d:
            a = re.search(rf'"dist\.shard_annotate"\({d.group(1)}\) \{{placements = #dist\.placements<\[([^\]]*)\]',
                          lines[i + 1])
            if a:
                annotated[d.group(3)] = a.group(1)
    want = {"fc1.weight": "Shard(1)", "fc1.bias": "Shard(0)", "fc2.weight": "Shard(0)", "fc2.bias": "Replicate()"}
    if mode == "dp":
        want = {"x0": "Shard(0)", "x1": "Shard(0)", **{k: "Replicate()" for k in want}}
    for name, placements in want.items():
        assert annotated.get(name) == placements, (name, annotated)
    # AdamW's two moments of each parameter follow it
    for i, placements in enumerate(want[k] for k in want if not k.startswith("x")):
        assert annotated.get(f"opt{i}.moment1") == annotated.get(f"opt{i}.moment2") == placements, annotated
    assert len(annotated) == len(want) + 8 and "opt_lr" not in annotated, annotated
    assert len(re.findall('"dist.shard_annotate"', text)) == len(annotated) + 1 + 4  # the loss, the gradients
    # global shapes: the whole weights and the whole batch
    assert '{name = "fc1.weight"} : () -> (tensor<8x16xf64>)' in text, text[:2000]
    assert '{name = "x0"} : () -> (tensor<8x8xf64>)' in text
    assert "pd_op.matmul" in text and "dist.adamw_update" in text
    assert "dist.all_reduce" not in text and "dist.all_gather" not in text, "no transfers in the global program"


if __name__ == "__main__":
    main(sys.argv[1])
