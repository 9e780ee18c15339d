"""Training-API suite: optimizer steps over ResNet-18-shaped parameters, checkpoint save and
load of the same state dict, and DataLoader throughput with worker processes.

    python3 bench/bench_train.py [--frameworks oar,torch] [--threads 1,2]

The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`); torch uses its
default (foreach) optimizers, torch.save/torch.load and torch.utils.data.DataLoader.
"""

import os
import tempfile

import numpy as np

import common

METRICS = [
    ("sgd_momentum_step_ms", "ms", "low"),  # Momentum 0.9, 11.7M params in 62 tensors
    ("adam_step_ms", "ms", "low"),  # Adam, same parameters
    ("adamw_step_ms", "ms", "low"),  # AdamW (decoupled decay 0.01)
    ("rmsprop_step_ms", "ms", "low"),  # RMSProp centered, momentum 0.9
    ("save_state_ms", "ms", "low"),  # state dict of those parameters to a file (47 MB)
    ("load_state_ms", "ms", "low"),  # and back
    ("loader_0w_ksamples_s", "k/s", "high"),  # DataLoader, 3x32x32 uint8 -> float, batch 64
    ("loader_2w_ksamples_s", "k/s", "high"),  # same with 2 worker processes
]


def resnet18_shapes():
    """Conv, BatchNorm and fc parameter shapes of ResNet-18 (11,689,512 values)."""
    shapes = [[64, 3, 7, 7], [64], [64]]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for b in range(2):
            shapes += [[cout, cin, 3, 3], [cout], [cout], [cout, cout, 3, 3], [cout], [cout]]
            if b == 0 and (stride != 1 or cin != cout):
                shapes += [[cout, cin, 1, 1], [cout], [cout]]
            cin = cout
    return shapes + [[512, 1000], [1000]]


SHAPES = resnet18_shapes()
rng = np.random.default_rng(0)
VALUES = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in SHAPES]
IMAGES = rng.integers(0, 256, size=(2048, 32, 32, 3), dtype=np.uint8)


def image_sample(i):
    x = IMAGES[i].astype(np.float32).transpose(2, 0, 1) / 255.0
    return (x - 0.5) / 0.5, np.int64(i % 10)


def loader_cases(make_loader):
    def run(workers):
        loader = make_loader(workers)
        next(iter(loader))  # worker start-up is not throughput

        def epoch():
            for _ in loader:
                pass

        return len(IMAGES) / common.bench(epoch, repeat=3, target=0.0, warmup=1) / 1e3

    return {
        "loader": lambda: {
            "loader_0w_ksamples_s": run(0),
            "loader_2w_ksamples_s": run(2),
        }
    }


def timing_cases(params, optimizers, save, load):
    def opt_cases():
        out = {}
        for metric, make in optimizers.items():
            opt = make(params)
            opt.step()
            out[metric] = common.bench(opt.step, repeat=5) * 1e3
        return out

    def ckpt():
        d = tempfile.mkdtemp(prefix="bench_train_")
        path = os.path.join(d, "state")
        state = {f"p{i}": p for i, p in enumerate(params)}
        out = {
            "save_state_ms": common.bench(lambda: save(state, path), repeat=5) * 1e3,
            "load_state_ms": common.bench(lambda: load(path), repeat=5) * 1e3,
        }
        os.remove(path)
        os.rmdir(d)
        return out

    return {"optimizers": opt_cases, "checkpoint": ckpt}


def torch_cases(torch):
    params = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in VALUES]
    for p in params:
        p.grad = torch.full_like(p, 0.01)
    optimizers = {
        "sgd_momentum_step_ms": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
        "adam_step_ms": lambda ps: torch.optim.Adam(ps, lr=1e-3),
        "adamw_step_ms": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01),
        "rmsprop_step_ms": lambda ps: torch.optim.RMSprop(
            ps, lr=1e-3, alpha=0.95, eps=1e-6, momentum=0.9, centered=True
        ),
    }

    def save(state, path):
        torch.save({k: v.detach() for k, v in state.items()}, path)

    def load(path):
        return torch.load(path)

    class Images(torch.utils.data.Dataset):
        def __getitem__(self, i):
            return image_sample(i)

        def __len__(self):
            return len(IMAGES)

    def make_loader(workers):
        return torch.utils.data.DataLoader(
            Images(),
            batch_size=64,
            shuffle=True,
            num_workers=workers,
            persistent_workers=workers > 0,
        )

    return {**timing_cases(params, optimizers, save, load), **loader_cases(make_loader)}


def oar_cases(paddle):
    params = [paddle.create_parameter(list(v.shape), "float32") for v in VALUES]
    for p, v in zip(params, VALUES):
        p.set_value(v)
    sum((p * 0.01).sum() for p in params).backward()  # every grad = 0.01
    opt = paddle.optimizer
    optimizers = {
        "sgd_momentum_step_ms": lambda ps: opt.Momentum(0.01, momentum=0.9, parameters=ps),
        "adam_step_ms": lambda ps: opt.Adam(1e-3, parameters=ps),
        "adamw_step_ms": lambda ps: opt.AdamW(1e-3, parameters=ps, weight_decay=0.01),
        "rmsprop_step_ms": lambda ps: opt.RMSProp(
            1e-3, rho=0.95, epsilon=1e-6, momentum=0.9, centered=True, parameters=ps
        ),
    }

    class Images(paddle.io.Dataset):
        def __getitem__(self, i):
            return image_sample(i)

        def __len__(self):
            return len(IMAGES)

    def make_loader(workers):
        return paddle.io.DataLoader(
            Images(),
            batch_size=64,
            shuffle=True,
            num_workers=workers,
            persistent_workers=workers > 0,
        )

    return {
        **timing_cases(params, optimizers, paddle.save, paddle.load),
        **loader_cases(make_loader),
    }


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
