"""LeNet trained 50 steps on the sample device matches the same training on the CPU
(1e-5 relative): forward, backward and the optimizer's updates all run on device tensors,
the forward and backward ops through the sample device's own C kernels. The training
runs in a fresh interpreter, so every op that fell back prints its warning there (once
per op, device type and dtype): none may name the sample device."""
import os
import subprocess
import sys

import numpy as np

from sample_plugin import sample_plugin_path

TRAIN = r"""
import sys
import numpy as np
import oar
from oar.vision.models import LeNet

oar.device.load_plugin(sys.argv[1])


def train(device, init_state, data, steps=50):
    model = LeNet()  # on the CPU, then moved (Layer.to)
    model.set_state_dict(init_state)
    model.to(device)
    oar.set_device(device)
    try:
        assert all(p.place.device_str() == device for p in model.parameters())
        opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
        loss_fn = oar.nn.CrossEntropyLoss()
        losses = []
        for step in range(steps):
            x, y = data[step % len(data)]
            loss = loss_fn(model(oar.to_tensor(x)), oar.to_tensor(y))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(loss.item())
        return np.array(losses), {k: v.numpy() for k, v in model.state_dict().items()}
    finally:
        oar.set_device("cpu")


oar.seed(0)
init_state = {k: v.numpy() for k, v in LeNet().state_dict().items()}
rng = np.random.default_rng(0)
data = [(rng.standard_normal((8, 1, 28, 28)).astype("float32"),
         rng.integers(0, 10, (8, 1)).astype("int64")) for _ in range(10)]
cpu_losses, cpu_state = train("cpu", init_state, data)
dev_losses, dev_state = train("sample:0", init_state, data)
np.savez(sys.argv[2], cpu_losses=cpu_losses, dev_losses=dev_losses,
         **{"cpu/" + k: v for k, v in cpu_state.items()}, **{"dev/" + k: v for k, v in dev_state.items()})
"""


def test_lenet_trains_on_the_sample_device_like_on_the_cpu(tmp_path):
    out = tmp_path / "lenet.npz"
    run = subprocess.run([sys.executable, "-c", TRAIN, sample_plugin_path(), str(out)], capture_output=True, text=True,
                         env=dict(os.environ, SAMPLE_DEVICE_FAIL=""), timeout=600)
    assert run.returncode == 0, run.stderr
    # Every op of the model and the optimizer's fused update (adam_update, a C update kernel
    # of the sample device) run on the device: nothing falls back to the CPU.
    fell_back = [line for line in run.stderr.splitlines() if "has no sample kernel" in line]
    assert fell_back == [], "ops that ran on the CPU instead of the sample device:\n" + "\n".join(fell_back)
    r = np.load(out)
    cpu_losses, dev_losses = r["cpu_losses"], r["dev_losses"]
    assert cpu_losses[-1] < cpu_losses[0]  # it learned something
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-5)
    keys = [k[4:] for k in r.files if k.startswith("cpu/")]
    assert keys
    for k in keys:
        np.testing.assert_allclose(r["dev/" + k], r["cpu/" + k], rtol=1e-5, atol=1e-7, err_msg=k)
