"""Wide suite: ops outside the other suites that a survey found at 1.5-10x torch's time before
stop 61 (losses, scans, selection and sorting, gathers along an axis, random draws, strided
copies, grid_sample) and before stop 64 (bitwise ops, prelu, glu, channel dropout, mode,
quantile, cdist, repeat_interleave, LU), and split, whose parts are views since stop 70
(copies before), against PyTorch.

    python3 bench/bench_wide.py [--frameworks oar,torch] [--threads 1]

[1024, 1024] float32 unless said; the oar side is written as PaddlePaddle 3.x code (`import oar
as paddle`); each metric is the median time of one call; "_fb" is the forward and the backward
of the sum (the input's .grad cleared each call).
"""
import numpy as np

import common

rng = np.random.default_rng(0)
A = rng.standard_normal((1024, 1024)).astype(np.float32)
B = rng.standard_normal((1024, 1024)).astype(np.float32)
LABEL = (B > 0).astype(np.float32)
IDX = rng.integers(0, 1024, (1024, 1024)).astype(np.int64)
INTS = rng.integers(0, 5000, 1 << 20).astype(np.int64)
IMG = rng.standard_normal((16, 64, 32, 32)).astype(np.float32)
GRID = rng.uniform(-1, 1, (16, 32, 32, 2)).astype(np.float32)
IDS = rng.integers(0, 32000, (64, 128)).astype(np.int64)
ALPHA = np.full(64, 0.2, np.float32)
SMALL = np.round(A * 3)
C3, C4 = A[:256, :64].copy(), B[:512, :64].copy()
M256 = A[:256, :256] + 16 * np.eye(256, dtype=np.float32)
QKV = rng.standard_normal((8, 128, 768)).astype(np.float32)  # a GPT block's fused projection

NAMES = ["prod_rows", "smooth_l1_fb", "bce_logits_fb", "mse_fb", "cumprod", "cummax", "take_along",
         "put_along", "topk8", "sort", "unique_1m", "rand_1m", "randn_1m", "dropout", "pixel_shuffle",
         "grid_sample", "count_nonzero", "bitwise_and", "prelu", "glu", "dropout2d", "mode",
         "quantile", "cdist", "repeat_interleave", "lu_256", "split3", "split3_fb"]
METRICS = [(f"{n}_ms", "ms", "low") for n in NAMES]


def cases(fw, mod):
    t = fw == "torch"
    if t:
        import torch.nn.functional as F
        T = mod.from_numpy

        def G(a):
            return T(a).clone().requires_grad_()

        def fb(loss, x):
            x.grad = None
            loss.backward()
        ax = (lambda k: {"dim": k})
    else:
        F = mod.nn.functional
        T = mod.to_tensor

        def G(a):
            return mod.to_tensor(a, stop_gradient=False)

        def fb(loss, x):
            x.clear_gradient() if x.grad is not None else None
            loss.backward()
        ax = (lambda k: {"axis": k})
    a, b, lab, idx, ints, img, grid = T(A), T(B), T(LABEL), T(IDX), T(INTS), T(IMG), T(GRID)
    ids, alpha, small, c3, c4, m256 = T(IDS), T(ALPHA), T(SMALL), T(C3), T(C4), T(M256)
    mask = T(np.array(255, np.int64))
    ag, qkv = G(A), G(QKV)

    def split3():  # q, k, v of the projection, as attention code writes it
        return mod.split(qkv, 256, dim=-1) if t else mod.split(qkv, 3, axis=-1)

    def split3_fb():
        q, k, v = split3()
        fb((q * k + v).sum(), qkv)
    calls = {
        "prod_rows": lambda: a.prod(1) if t else a.prod(axis=1),
        "smooth_l1_fb": lambda: fb(F.smooth_l1_loss(ag, b), ag),
        "bce_logits_fb": lambda: fb(F.binary_cross_entropy_with_logits(ag, lab), ag),
        "mse_fb": lambda: fb(F.mse_loss(ag, b), ag),
        "cumprod": lambda: mod.cumprod(a, dim=1),
        "cummax": lambda: mod.cummax(a, **ax(1)),
        "take_along": lambda: mod.take_along_dim(a, idx, dim=1) if t else mod.take_along_axis(a, idx, axis=1),
        "put_along": lambda: a.scatter(1, idx, b) if t else mod.put_along_axis(a, idx, b, 1),
        "topk8": lambda: mod.topk(a, 8, **ax(1)),
        "sort": lambda: mod.sort(a, **ax(1)),
        "unique_1m": lambda: mod.unique(ints),
        "rand_1m": lambda: mod.rand(1024, 1024) if t else mod.rand([1024, 1024]),
        "randn_1m": lambda: mod.randn(1024, 1024) if t else mod.randn([1024, 1024]),
        "dropout": lambda: F.dropout(a, 0.1, training=True),
        "pixel_shuffle": lambda: F.pixel_shuffle(img, 2),
        "grid_sample": lambda: F.grid_sample(img, grid, align_corners=False),
        "count_nonzero": lambda: mod.count_nonzero(a),
        "bitwise_and": lambda: mod.bitwise_and(ids, mask),
        "prelu": lambda: F.prelu(img, alpha),
        "glu": lambda: F.glu(a, 1),
        "dropout2d": lambda: F.dropout2d(img, 0.5, training=True),
        "mode": lambda: mod.mode(small, **ax(1)),
        "quantile": lambda: mod.quantile(a[:256], 0.3, **ax(1)),
        "cdist": lambda: mod.cdist(c3, c4),
        "repeat_interleave": lambda: mod.repeat_interleave(a[:256], 4, **ax(0)),
        "lu_256": lambda: mod.linalg.lu_factor(m256) if t else mod.linalg.lu(m256),
        "split3": split3,
        "split3_fb": split3_fb,
    }
    return {n: (lambda f=f, n=n: {f"{n}_ms": common.bench(f) * 1e3}) for n, f in calls.items()}


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
