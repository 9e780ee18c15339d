"""Writes this folder's Paddle checkpoints; run under PaddlePaddle 3.3.1 (not Oar):
    ~/.cache/oar-paddle-ref/bin/python tests/python/compat/paddle331/make_checkpoints.py
A Linear(2, 3) and a Linear(3, 1) trained two Adam steps (the second layer sits the first
step out), saved with paddle.save, then one more step: expected.json holds the weights after
it and the loss, for test_paddle_checkpoints.py. nested.pd: paddle.save of nested
containers with float32, int64 and bfloat16 tensors and a plain array."""
import json
import os

import numpy as np
import paddle

here = os.path.dirname(os.path.abspath(__file__))
a, b = paddle.nn.Linear(2, 3), paddle.nn.Linear(3, 1)
for p, v in zip(a.parameters() + b.parameters(),
                [[[0.5, -0.2, 0.1], [0.3, 0.4, -0.6]], [0.1, 0.0, -0.1], [[0.2], [-0.3], [0.5]], [0.05]]):
    p.set_value(np.asarray(v, np.float32))
opt = paddle.optimizer.Adam(learning_rate=0.1, parameters=a.parameters() + b.parameters())
x = paddle.to_tensor([[1.0, 2.0], [-1.0, 0.5]])


def step(i):
    h = a(x)
    loss = (h * h).mean() if i == 0 else (b(paddle.nn.functional.relu(h)) ** 2).mean() + (h * h).mean()
    loss.backward()
    opt.step()
    opt.clear_grad()
    return float(loss)


for i in range(2):
    step(i)
paddle.save({"a": a.state_dict(), "b": b.state_dict()}, os.path.join(here, "model.pdparams"))
paddle.save(opt.state_dict(), os.path.join(here, "adam.pdopt"))
loss = step(2)
json.dump({"weights": [p.numpy().tolist() for p in a.parameters() + b.parameters()], "loss": loss},
          open(os.path.join(here, "expected.json"), "w"))
t = paddle.to_tensor([1.5, -2.0])
paddle.save({"list": [t, 3, "x"], "tuple": (paddle.to_tensor([1, 2]), {"arr": np.arange(3)}),
             "bf16": t.astype("bfloat16")}, os.path.join(here, "nested.pd"))
