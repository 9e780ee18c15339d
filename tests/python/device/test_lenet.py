"""LeNet trained 50 steps on the sample device matches the same training on the CPU
(1e-5 relative): forward, backward and the optimizer's updates all run on device tensors,
the forward and backward ops through the sample device's own C kernels (the fallback
counters show none of them ran on the CPU)."""
import numpy as np

import oar
from oar.vision.models import LeNet


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


def test_lenet_trains_on_the_sample_device_like_on_the_cpu(sample):
    oar.seed(0)
    init_state = {k: v.numpy() for k, v in LeNet().state_dict().items()}
    rng = np.random.default_rng(0)
    data = [(rng.standard_normal((8, 1, 28, 28)).astype("float32"),
             rng.integers(0, 10, (8, 1)).astype("int64")) for _ in range(10)]
    cpu_losses, cpu_state = train("cpu", init_state, data)
    oar._C._reset_fallback_counts()
    dev_losses, dev_state = train("sample:0", init_state, data)
    fell_back = sorted(k for k in oar._C._fallback_counts() if "/sample/" in k)
    assert fell_back == [], f"ops that ran on the CPU instead of the sample device: {fell_back}"
    assert cpu_losses[-1] < cpu_losses[0]  # it learned something
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-5)
    for k in cpu_state:
        np.testing.assert_allclose(dev_state[k], cpu_state[k], rtol=1e-5, atol=1e-7, err_msg=k)
