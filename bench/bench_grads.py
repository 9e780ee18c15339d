"""Gradient suite: the forward and the backward of ops whose backward is a kernel or a
composite of its own, against PyTorch. Forward-only suites missed a grid_sample backward
at 8.4x torch's time (stop 67); this suite is where such a gap shows.

    bash bench/run.sh grads [--threads 1]

Each metric is the median time of one call of forward + `.sum().backward()` (the inputs'
gradients cleared each call), float32; the oar side is PaddlePaddle 3.x code (`import oar
as paddle`).
"""
import numpy as np

import common

rng = np.random.default_rng(0)


def R(*s):
    return rng.standard_normal(s).astype(np.float32)


IMG, SEQ, VEC, MAT = R(16, 32, 32, 32), R(16, 64, 128), R(256, 1024), R(512, 512)
VEC2, W3, W1 = R(256, 1024), R(32, 32, 3, 3) * 0.1, R(64, 64, 3) * 0.1
IDX = rng.integers(0, 1024, (256, 64)).astype(np.int64)
LAB = rng.integers(0, 1000, 256).astype(np.int64)
IMG64, GRID = R(16, 64, 32, 32), rng.uniform(-1, 1, (16, 32, 32, 2)).astype(np.float32)
Q = R(8, 4, 128, 64)
NAMES = ["conv2d", "conv1d", "interp_bilinear", "interp_nearest", "interp_bicubic", "grid_sample",
         "max_pool2d", "avg_pool2d", "adaptive_avg", "adaptive_max", "pad_reflect", "pad_constant",
         "unfold", "pixel_shuffle", "layer_norm", "group_norm", "batch_norm", "embedding",
         "cross_entropy", "log_softmax", "softmax", "gelu", "silu", "logsumexp", "cumsum",
         "cumprod", "cummax", "sort", "topk", "gather", "median", "norm", "cdist", "bmm",
         "var", "max_dim", "roll", "repeat_interleave", "cosine_sim", "normalize", "where",
         "clip", "atan2", "sdpa", "smooth_l1", "bce_logits", "glu", "prelu"]
METRICS = [(f"{n}_ms", "ms", "low") for n in NAMES]


def cases(fw, mod):
    t = fw == "torch"
    if t:
        import torch.nn.functional as F

        def P(a):
            return mod.from_numpy(a).clone().requires_grad_()
        C = mod.from_numpy

        def clear(x):
            x.grad = None
    else:
        F = mod.nn.functional

        def P(a):
            return mod.to_tensor(a, stop_gradient=False)
        C = mod.to_tensor

        def clear(x):
            x.clear_gradient()
    ax = (lambda k: {"dim": k}) if t else (lambda k: {"axis": k})
    idx, lab = C(IDX), C(LAB)
    run = {
        "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [IMG, W3]),
        "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), [SEQ, W1]),
        "interp_bilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), [IMG]),
        "interp_nearest": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [IMG]),
        "interp_bicubic": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False), [IMG]),
        "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False), [IMG64, GRID]),
        "max_pool2d": (lambda x: F.max_pool2d(x, 2), [IMG]),
        "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1), [IMG]),
        "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, 7), [IMG]),
        "adaptive_max": (lambda x: F.adaptive_max_pool2d(x, 7), [IMG]),
        "pad_reflect": (lambda x: F.pad(x, [2, 2, 2, 2], mode="reflect"), [IMG]),
        "pad_constant": (lambda x: F.pad(x, [2, 2, 2, 2]), [IMG]),
        "unfold": (lambda x: F.unfold(x, 3, padding=1) if t else F.unfold(x, 3, paddings=1), [IMG]),
        "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [IMG]),
        "layer_norm": (lambda x: F.layer_norm(x, [128]), [SEQ]),
        "group_norm": (lambda x: F.group_norm(x, 8), [IMG]),
        "batch_norm": (lambda x: F.batch_norm(x, C(np.zeros(32, np.float32)), C(np.ones(32, np.float32)),
                                              training=True), [IMG]),
        "embedding": (lambda w: F.embedding(idx, w), [R(1024, 256)]),
        "cross_entropy": (lambda x: F.cross_entropy(x, lab), [R(256, 1000)]),
        "log_softmax": (lambda x: F.log_softmax(x, -1), [VEC]),
        "softmax": (lambda x: F.softmax(x, -1), [VEC]),
        "gelu": (lambda x: F.gelu(x), [VEC]),
        "silu": (lambda x: F.silu(x), [VEC]),
        "logsumexp": (lambda x: mod.logsumexp(x, **ax(1)), [VEC]),
        "cumsum": (lambda x: mod.cumsum(x, **ax(1)), [VEC]),
        "cumprod": (lambda x: mod.cumprod(x, dim=1), [VEC]),
        "cummax": (lambda x: mod.cummax(x, **ax(1))[0], [VEC]),
        "sort": (lambda x: mod.sort(x, 1)[0] if t else mod.sort(x, axis=1), [VEC]),
        "topk": (lambda x: mod.topk(x, 16, **ax(1))[0], [VEC]),
        "gather": (lambda x: mod.gather(x, 1, idx) if t else mod.take_along_axis(x, idx, 1), [VEC]),
        "median": (lambda x: mod.median(x, 1)[0] if t else mod.median(x, axis=1), [VEC]),
        "norm": (lambda x: mod.linalg.norm(x, **ax(1)), [VEC]),
        "cdist": (lambda a, b: mod.cdist(a, b), [R(256, 64), R(512, 64)]),
        "bmm": (lambda a, b: mod.bmm(a, b), [R(16, 128, 64), R(16, 64, 128)]),
        "var": (lambda x: mod.var(x, **ax(1)), [VEC]),
        "max_dim": (lambda x: mod.max(x, 1)[0] if t else mod.max(x, axis=1), [VEC]),
        "roll": (lambda x: mod.roll(x, 3, 1) if t else mod.roll(x, 3, axis=1), [VEC]),
        "repeat_interleave": (lambda x: mod.repeat_interleave(x, 2, **ax(0)), [VEC]),
        "cosine_sim": (lambda a, b: F.cosine_similarity(a, b, **ax(1)), [VEC, VEC2]),
        "normalize": (lambda x: F.normalize(x, **ax(1)), [VEC]),
        "where": (lambda a, b: mod.where(C(VEC > 0), a, b), [VEC, VEC2]),
        "clip": (lambda x: mod.clamp(x, -0.5, 0.5) if t else mod.clip(x, -0.5, 0.5), [VEC]),
        "atan2": (lambda a, b: mod.atan2(a, b), [VEC, VEC2]),
        "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [Q, Q, Q]),
        "smooth_l1": (lambda a: F.smooth_l1_loss(a, C(VEC)), [VEC2]),
        "bce_logits": (lambda a: F.binary_cross_entropy_with_logits(a, C((VEC > 0).astype(np.float32))), [VEC2]),
        "glu": (lambda x: F.glu(x, -1), [VEC]),
        "prelu": (lambda x, a: F.prelu(x, a), [IMG, np.full(32, 0.2, np.float32)]),
    }

    def case(name):
        fn, arrays = run[name]
        xs = [P(a) for a in arrays]

        def step():
            for x in xs:
                clear(x)
            fn(*xs).sum().backward()
        return lambda: {f"{name}_ms": common.bench(step) * 1e3}
    return {n: case(n) for n in NAMES}


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
