"""batch_norm's training statistics as fused channel reductions (Note [Channel
reductions]) against Oar's eager batch_norm kernels, interleaved in one process
(common.bench_pair), 1 thread:
    python bench/cinn_batch_norm.py [rounds]
`fwd`: the training forward (batch mean and biased variance over N, H, W, normalize,
scale and shift) written from primitives under to_static(backend='CINN') against
F.batch_norm(training=True) (its kernel also updates running statistics, which the
primitives form does not: a small extra write); `fwd+bwd`: the same with x, weight and
bias gradients of sum(y * g) (the kernel's batch_norm_grad against the fused backward's
sum(dy) and sum(dy * x_hat) groups). Also `composed`: the primitives form without CINN."""
import sys

import numpy as np

import common
import oar
import oar.nn.functional as F

SHAPES = [(32, 64, 28, 28), (8, 256, 14, 14), (64, 32, 8, 8), (16, 16, 56, 56)]


def bn_prims(x, w, b):
    m = oar.mean(x, axis=[0, 2, 3], keepdim=True)
    d = x - m
    v = oar.mean(d * d, axis=[0, 2, 3], keepdim=True)
    return d * oar.rsqrt(v + 1e-5) * w + b


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    oar.set_num_threads(1)
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        c = shape[1]
        x = oar.to_tensor(rng.standard_normal(shape).astype("float32"))
        g = oar.to_tensor(rng.standard_normal(shape).astype("float32"))
        w = oar.to_tensor(rng.uniform(0.5, 1.5, (1, c, 1, 1)).astype("float32"))
        b = oar.to_tensor(rng.standard_normal((1, c, 1, 1)).astype("float32"))
        rm, rv = oar.zeros([c]), oar.ones([c])
        w1, b1 = w.reshape([c]), b.reshape([c])

        def kernel(x=x):
            return F.batch_norm(x, rm, rv, w1, b1, training=True)

        fused = oar.jit.to_static(bn_prims, backend="CINN")
        plain = oar.jit.to_static(bn_prims)
        np.testing.assert_allclose(fused(x, w, b).numpy(), kernel().numpy(), rtol=1e-3, atol=1e-3)
        mf, mk = common.bench_pair(lambda: fused(x, w, b), kernel, repeat=rounds)
        mc, mk2 = common.bench_pair(lambda: plain(x, w, b), kernel, repeat=rounds)
        xs, ws, bs = x.detach(), w.detach(), b.detach()
        for t in (xs, ws, bs):
            t.stop_gradient = False
        w1s, b1s = ws.reshape([c]), bs.reshape([c])

        def step_fused():
            (fused(xs, ws, bs) * g).sum().backward()
            for t in (xs, ws, bs):
                t.clear_gradient()

        def step_kernel():
            (F.batch_norm(xs, rm, rv, ws.reshape([c]), bs.reshape([c]), training=True) * g).sum().backward()
            for t in (xs, ws, bs):
                t.clear_gradient()

        del w1s, b1s
        bf, bk = common.bench_pair(step_fused, step_kernel, repeat=rounds)
        print(f"{list(shape)}: fwd fused {mf * 1e3:.2f} / kernel {mk * 1e3:.2f} ms ({mk / mf:.2f}x), "
              f"composed {mc * 1e3:.2f} / kernel {mk2 * 1e3:.2f} ms ({mk2 / mc:.2f}x); "
              f"fwd+bwd fused {bf * 1e3:.2f} / kernel {bk * 1e3:.2f} ms ({bk / bf:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
