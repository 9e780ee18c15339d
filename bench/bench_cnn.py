"""CNN suite: convolution, pooling, normalizations and a LeNet training step.

    python3 bench/bench_cnn.py [--frameworks oar,torch] [--threads 1]

The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`); all shapes
are float32, NCHW.
"""
import numpy as np

import common

METRICS = [
    ("conv3x3_fwd_ms", "ms", "low"),      # 3x3 conv, 64->64 ch, 56x56, batch 8, padding 1
    ("conv3x3_fwdbwd_ms", "ms", "low"),   # same, forward + input and filter gradients
    ("conv1x1_s2_fwd_ms", "ms", "low"),   # 1x1 conv, 64->128 ch, stride 2, 56x56, batch 8
    ("maxpool3x3s2_ms", "ms", "low"),     # max_pool2d k3 s2 p1 on [8, 64, 112, 112]
    ("avgpool2x2_ms", "ms", "low"),       # avg_pool2d k2 s2 on [8, 64, 56, 56]
    ("adaptive_avgpool_ms", "ms", "low"),  # adaptive_avg_pool2d to 1x1 on [8, 512, 7, 7]
    ("batch_norm_fwd_ms", "ms", "low"),   # training-mode batch_norm on [8, 64, 56, 56]
    ("batch_norm_fwdbwd_ms", "ms", "low"),
    ("layer_norm_fwd_ms", "ms", "low"),   # layer_norm over 768 on [4096, 768]
    ("layer_norm_fwdbwd_ms", "ms", "low"),
    ("lenet_train_step_ms", "ms", "low"),  # LeNet-5 on [64, 1, 28, 28], fwd + bwd + SGD step
]

rng = np.random.default_rng(0)
X_CONV = rng.standard_normal((8, 64, 56, 56), dtype=np.float32)
W3 = rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05
W1 = rng.standard_normal((128, 64, 1, 1), dtype=np.float32) * 0.1
X_POOL = rng.standard_normal((8, 64, 112, 112), dtype=np.float32)
X_GAP = rng.standard_normal((8, 512, 7, 7), dtype=np.float32)
X_LN = rng.standard_normal((4096, 768), dtype=np.float32)
X_LENET = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
Y_LENET = rng.integers(0, 10, (64,), dtype=np.int64)


def ms(fn):
    return common.bench(fn, repeat=5) * 1e3


def torch_cases(torch):
    t = torch.from_numpy
    F = torch.nn.functional
    nn = torch.nn

    def conv():
        x, w = t(X_CONV).requires_grad_(), t(W3).requires_grad_()
        g = torch.ones(8, 64, 56, 56)

        def fb():
            y = F.conv2d(x, w, padding=1)
            x.grad = w.grad = None
            y.backward(g)
        with torch.no_grad():
            fwd = ms(lambda: F.conv2d(x, w, padding=1))
            fwd1 = ms(lambda: F.conv2d(x, t(W1), stride=2))
        return {"conv3x3_fwd_ms": fwd, "conv3x3_fwdbwd_ms": ms(fb), "conv1x1_s2_fwd_ms": fwd1}

    def pool():
        xp, xc, xg = t(X_POOL), t(X_CONV), t(X_GAP)
        with torch.no_grad():
            return {"maxpool3x3s2_ms": ms(lambda: F.max_pool2d(xp, 3, 2, 1)),
                    "avgpool2x2_ms": ms(lambda: F.avg_pool2d(xc, 2, 2)),
                    "adaptive_avgpool_ms": ms(lambda: F.adaptive_avg_pool2d(xg, 1))}

    def norms():
        x = t(X_CONV).requires_grad_()
        rm, rv = torch.zeros(64), torch.ones(64)
        w, b = torch.ones(64, requires_grad=True), torch.zeros(64, requires_grad=True)
        xl = t(X_LN).requires_grad_()
        wl, bl = torch.ones(768, requires_grad=True), torch.zeros(768, requires_grad=True)

        def bn_fb():
            y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1)
            x.grad = w.grad = b.grad = None
            y.sum().backward()

        def ln_fb():
            y = F.layer_norm(xl, [768], wl, bl)
            xl.grad = wl.grad = bl.grad = None
            y.sum().backward()
        with torch.no_grad():
            bn = ms(lambda: F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1))
            ln = ms(lambda: F.layer_norm(xl, [768], wl, bl))
        return {"batch_norm_fwd_ms": bn, "batch_norm_fwdbwd_ms": ms(bn_fb),
                "layer_norm_fwd_ms": ln, "layer_norm_fwdbwd_ms": ms(ln_fb)}

    def lenet():
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
            nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        xb, yb = t(X_LENET), t(Y_LENET)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return {"lenet_train_step_ms": ms(step)}

    return {"conv": conv, "pool": pool, "norms": norms, "lenet": lenet}


def oar_cases(paddle):
    t = paddle.to_tensor
    F = paddle.nn.functional
    nn = paddle.nn

    def conv():
        x, w = t(X_CONV, stop_gradient=False), t(W3, stop_gradient=False)
        g = paddle.ones([8, 64, 56, 56])

        def fb():
            y = F.conv2d(x, w, padding=1)
            x.clear_gradient(False)
            w.clear_gradient(False)
            y.backward(g)
        with paddle.no_grad():
            fwd = ms(lambda: F.conv2d(x, w, padding=1))
            w1 = t(W1)
            fwd1 = ms(lambda: F.conv2d(x, w1, stride=2))
        return {"conv3x3_fwd_ms": fwd, "conv3x3_fwdbwd_ms": ms(fb), "conv1x1_s2_fwd_ms": fwd1}

    def pool():
        xp, xc, xg = t(X_POOL), t(X_CONV), t(X_GAP)
        return {"maxpool3x3s2_ms": ms(lambda: F.max_pool2d(xp, 3, 2, 1)),
                "avgpool2x2_ms": ms(lambda: F.avg_pool2d(xc, 2, 2)),
                "adaptive_avgpool_ms": ms(lambda: F.adaptive_avg_pool2d(xg, 1))}

    def norms():
        x = t(X_CONV, stop_gradient=False)
        rm, rv = paddle.zeros([64]), paddle.ones([64])
        w, b = t(np.ones(64, np.float32), stop_gradient=False), t(np.zeros(64, np.float32), stop_gradient=False)
        xl = t(X_LN, stop_gradient=False)
        wl = t(np.ones(768, np.float32), stop_gradient=False)
        bl = t(np.zeros(768, np.float32), stop_gradient=False)

        def bn_fb():
            y = F.batch_norm(x, rm, rv, w, b, training=True)
            for p in (x, w, b):
                p.clear_gradient(False)
            y.sum().backward()

        def ln_fb():
            y = F.layer_norm(xl, [768], wl, bl)
            for p in (xl, wl, bl):
                p.clear_gradient(False)
            y.sum().backward()
        with paddle.no_grad():
            bn = ms(lambda: F.batch_norm(x, rm, rv, w, b, training=True))
            ln = ms(lambda: F.layer_norm(xl, [768], wl, bl))
        return {"batch_norm_fwd_ms": bn, "batch_norm_fwdbwd_ms": ms(bn_fb),
                "layer_norm_fwd_ms": ln, "layer_norm_fwdbwd_ms": ms(ln_fb)}

    def lenet():
        paddle.seed(0)
        model = nn.Sequential(
            nn.Conv2D(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2D(2), nn.Conv2D(6, 16, 5),
            nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
        opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        xb, yb = t(X_LENET), t(Y_LENET)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return {"lenet_train_step_ms": ms(step)}

    return {"conv": conv, "pool": pool, "norms": norms, "lenet": lenet}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
