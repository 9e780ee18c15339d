"""Note [Devices after fork] (backends/runtime/device_manager.cc): a child forked after its
parent initialized a device cannot use it (the device's runtime, a stream's worker threads,
stayed in the parent). It raises a RuntimeError that says so instead of waiting forever;
its CPU work runs. DataLoader workers make their samples on the CPU, so a loader forked
with a device current works and the main process gets its batches on the device."""
import numpy as np

import oar
from oar.io import DataLoader, Dataset
from sample_plugin import run_with_sample

_CHILD = """
import os, signal, sys
import numpy as np
import oar
x = oar.to_tensor(np.arange(4.0), place="sample:0") * 2   # the parent initialized the device
pid = os.fork()
if pid == 0:
    code = 3
    try:
        assert float(oar.ones([3]).sum()) == 3.0            # CPU work runs
        x.numpy()
    except RuntimeError as e:
        code = 0 if ("forked" in str(e) and "sample:0" in str(e) and "spawn" in str(e)) else 4
        print(e, flush=True)
    os._exit(code)
signal.alarm(60)                                            # a hang fails the test, not the suite
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
assert x.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]         # the parent's device is unaffected
"""


def test_a_forked_child_refuses_the_parents_device_instead_of_hanging():
    r = run_with_sample(_CHILD, timeout=120)
    assert "forked from one that had initialized the device" in r.stdout, r.stdout + r.stderr


class OpsDataset(Dataset):
    """Samples computed with Oar ops (in a worker: on the CPU, whatever the main device)."""

    def __getitem__(self, i):
        x = oar.full([3], float(i))
        assert x.place.device_str() == "cpu"
        return (x * 2).numpy(), np.int64(i)

    def __len__(self):
        return 6


def test_dataloader_workers_forked_with_a_device_current(sample):
    oar.to_tensor([1.0], place="sample:0").numpy()  # this process has initialized the device
    oar.set_device("sample:0")
    try:
        got = [(x, i) for x, i in DataLoader(OpsDataset(), batch_size=2, num_workers=2, timeout=60)]
    finally:
        oar.set_device("cpu")
    assert [int(v) for _, i in got for v in i.numpy()] == list(range(6))
    for x, i in got:
        assert x.place.device_str() == "sample:0"
        np.testing.assert_array_equal(x.numpy(), np.repeat(2.0 * i.numpy()[:, None], 3, axis=1))
