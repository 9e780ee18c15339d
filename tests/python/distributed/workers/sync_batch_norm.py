"""SyncBatchNorm on 2 ranks, each holding half of a batch, against BatchNorm2D on the whole
batch in one process (float64): outputs, input and parameter gradients, running statistics."""
import numpy as np

import oar
import oar.distributed as dist


def main():
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    oar.set_default_dtype("float64")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4 * world, 3, 2, 5))
    coef = rng.standard_normal(x.shape)
    part = slice(4 * rank, 4 * rank + 4)

    ref = oar.nn.BatchNorm2D(3, momentum=0.8)
    xr = oar.to_tensor(x, stop_gradient=False)
    yr = ref(xr)
    (yr * oar.to_tensor(coef)).sum().backward()

    sync = oar.nn.SyncBatchNorm.convert_sync_batchnorm(oar.nn.BatchNorm2D(3, momentum=0.8))
    assert type(sync).__name__ == "SyncBatchNorm"
    xs = oar.to_tensor(x[part], stop_gradient=False)
    ys = sync(xs)
    (ys * oar.to_tensor(coef[part])).sum().backward()
    for p in (sync.weight, sync.bias):  # what DataParallel does with parameter gradients
        dist.all_reduce(p.grad)

    checks = {
        "out": (ys.numpy(), yr.numpy()[part]),
        "x grad": (xs.grad.numpy(), xr.grad.numpy()[part]),
        "weight grad": (sync.weight.grad.numpy(), ref.weight.grad.numpy()),
        "bias grad": (sync.bias.grad.numpy(), ref.bias.grad.numpy()),
        "running mean": (sync._mean.numpy(), ref._mean.numpy()),
        "running var": (sync._variance.numpy(), ref._variance.numpy()),
    }
    for name, (got, want) in checks.items():
        err = float(np.abs(got - want).max())
        assert err < 1e-10, f"rank {rank}: {name} differs by {err}"
    sync.eval()  # eval: the running statistics, no communication
    np.testing.assert_allclose(sync(xs).numpy(), ref.eval()(xr).numpy()[part], atol=1e-12)
    print(f"rank {rank} sync batch norm ok")


if __name__ == "__main__":
    main()
