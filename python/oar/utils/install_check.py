"""paddle.utils.run_check: train a tiny network one step and say whether Oar works here."""
import numpy as np


def _train_one_step(oar, device):
    """A Linear(2, 4) -> mean network, one SGD step on `device`; returns (loss before, after)."""
    oar.set_device(device)
    gen = np.random.default_rng(0)
    x = oar.to_tensor(gen.standard_normal((8, 2)).astype("float32"))
    layer = oar.nn.Linear(2, 4)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    losses = []
    for _ in range(2):
        loss = (layer(x) ** 2).mean()
        loss.backward()
        for p in layer.parameters():
            if p.grad is None or list(p.grad.shape) != list(p.shape):
                raise RuntimeError(f"run_check: parameter {p.name} got no gradient of shape "
                                   f"{list(p.shape)} on {device}")
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    if not all(np.isfinite(losses)) or not losses[1] < losses[0]:
        raise RuntimeError(f"run_check: one SGD step on {device} should lower the loss, got "
                           f"{losses[0]} then {losses[1]}")
    return losses


def run_check():
    """Check that Oar is installed and runs: one training step of a small network on the
    current device (Paddle's check; Oar prints its own name in the messages)."""
    import oar
    device = oar.get_device()
    print("Running verify Oar program ... ")
    try:
        _train_one_step(oar, device)
    finally:
        oar.set_device(device)
    kind = device.split(":")[0].upper()
    print(f"Oar works well on 1 {kind}.")
    print("Oar is installed successfully! Let's start deep learning with Oar now.")
