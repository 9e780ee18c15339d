"""Model suite: training throughput of whole models (issue 4's bench).

    python3 bench/bench_models.py [--frameworks oar,torch] [--threads 1]

One training step = forward + cross-entropy + backward + Adam step, float32:
LeNet on [64, 1, 28, 28]; ResNet-18 (10 classes) on [16, 3, 64, 64]; a 4-layer
Transformer encoder (d_model 256, 4 heads, feed-forward 1024, no dropout) on
[8, 128, 256] with a mean-pooled 10-way head. The oar side is PaddlePaddle code
(`import oar as paddle`, Paddle's own LeNet/resnet18 from oar.vision.models); the torch
side builds the same architectures by hand (torchvision is not installed).
"""
import numpy as np

import common

METRICS = [
    ("lenet_step_ms", "ms", "low"),
    ("resnet18_step_ms", "ms", "low"),
    ("transformer4_step_ms", "ms", "low"),
]

rng = np.random.default_rng(0)
X_LENET = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
Y_LENET = rng.integers(0, 10, (64,), dtype=np.int64)
X_RES = rng.standard_normal((16, 3, 64, 64), dtype=np.float32)
Y_RES = rng.integers(0, 10, (16,), dtype=np.int64)
X_TF = rng.standard_normal((8, 128, 256), dtype=np.float32)
Y_TF = rng.integers(0, 10, (8,), dtype=np.int64)


def ms(fn, repeat=5):
    return common.bench(fn, repeat=repeat) * 1e3


def torch_models(torch):
    """{name: () -> torch module} for LeNet, ResNet-18 (10 classes) and the 4-layer Transformer
    (shared with bench_jit.py)."""
    nn = torch.nn

    def lenet():
        torch.manual_seed(0)
        return nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
            nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84),
            nn.Linear(84, 10))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + idt)

    def resnet18():
        torch.manual_seed(0)
        layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                  nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
        return nn.Sequential(*layers)

    class TF(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = nn.Linear(256, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(1))

    def transformer():
        torch.manual_seed(0)
        return TF()

    return {"lenet": lenet, "resnet18": resnet18, "transformer": transformer}


def torch_cases(torch):
    nn = torch.nn
    t = torch.from_numpy
    models = torch_models(torch)

    def run(model, x, y, repeat=5):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        xb, yb = t(x), t(y)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return ms(step, repeat)

    return {"lenet": lambda: {"lenet_step_ms": run(models["lenet"](), X_LENET, Y_LENET)},
            "resnet": lambda: {"resnet18_step_ms": run(models["resnet18"](), X_RES, Y_RES, 3)},
            "transformer": lambda: {"transformer4_step_ms": run(models["transformer"](), X_TF, Y_TF, 3)}}


def oar_models(paddle):
    """{name: () -> oar layer}, the same architectures in Paddle's API (shared with bench_jit.py)."""
    nn = paddle.nn

    class TF(nn.Layer):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0)
            self.enc = nn.TransformerEncoder(layer, 4)
            self.head = nn.Linear(256, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(1))

    def seeded(make):
        def build():
            paddle.seed(0)
            return make()
        return build

    return {"lenet": seeded(paddle.vision.models.LeNet),
            "resnet18": seeded(lambda: paddle.vision.models.resnet18(num_classes=10)),
            "transformer": seeded(TF)}


def oar_cases(paddle):
    nn = paddle.nn
    t = paddle.to_tensor
    models = oar_models(paddle)

    def run(model, x, y, repeat=5):
        opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        xb, yb = t(x), t(y)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return ms(step, repeat)

    return {"lenet": lambda: {"lenet_step_ms": run(models["lenet"](), X_LENET, Y_LENET)},
            "resnet": lambda: {"resnet18_step_ms": run(models["resnet18"](), X_RES, Y_RES, 3)},
            "transformer": lambda: {"transformer4_step_ms": run(models["transformer"](), X_TF, Y_TF, 3)}}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
