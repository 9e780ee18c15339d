"""batch_norm in training, decomposed and fused (Note [batch_norm decomposition],
Note [Channel reductions]) against Oar's eager batch_norm kernels, interleaved in one
process (common.bench_pair), 1 thread (or the second argument):
    python bench/cinn_batch_norm.py [rounds] [threads]
`fwd`: F.batch_norm(training=True) (running statistics updated) under
to_static(backend='CINN'), its `decomp:` rule fused (the statistics one sweep, the
normalize one elementwise kernel), against the same call eager; `fwd+bwd`: the same with
x, weight and bias gradients of sum(y * g) (batch_norm_grad decomposed: its two channel
sums one sweep, x_grad one elementwise kernel). Also `composed`: batch_norm written from
primitives (two-pass statistics) without CINN."""
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
    oar.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
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

        def bn_op(x, w, b):
            return F.batch_norm(x, rm, rv, w.reshape([c]), b.reshape([c]), training=True)

        fused = oar.jit.to_static(bn_op, backend="CINN")
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
